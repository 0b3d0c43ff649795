"""``macdma soak``: the command, its plan, its cocotb bench, fault injection, the memory
guard and functional coverage."""
