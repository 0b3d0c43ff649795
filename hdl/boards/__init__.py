"""Board-level pieces: PLL, RGMII adapter, UART host bridge, board tops."""
