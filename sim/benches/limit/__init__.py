"""The SoC's RTL without Python: a C++ Verilator harness of ``macdma_soc_hostmem`` that
runs the full-duplex workload at line rate, checks every frame, and so measures how fast
the RTL alone simulates (``macdma bench --limit``, docs/performance.md)."""
