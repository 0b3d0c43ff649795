"""Ethernet MAC: GMII/MII framing, CRC, statistics."""
