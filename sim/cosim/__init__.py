"""Co-simulation plumbing: Verilog export and its cache, simulator discovery, the cocotb
runner, progress display, Ctrl-C handling, output folders and failure messages."""
