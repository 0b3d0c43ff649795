"""The modelled host: the CPU model, its CPU files, and the platforms the driver runs on
(a cocotb bench or a board through its UART bridge)."""
