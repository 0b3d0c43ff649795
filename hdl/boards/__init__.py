"""Board-level pieces: PLL, RGMII adapter, MDIO master, UART host bridge, board tops."""
