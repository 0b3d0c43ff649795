"""Ethernet MAC: GMII/MII framing, CRC, statistics, MDIO (PHY management)."""
