"""Simulation: Verilog export and cache, simulator discovery, cocotb runner and test benches."""
