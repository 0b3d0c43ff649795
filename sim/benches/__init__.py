"""cocotb test benches: clocks, bus-functional models and monitors around exported tops."""
