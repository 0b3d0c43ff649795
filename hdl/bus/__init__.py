"""Bus interfaces of macdma: AXI4 master and AXI4-Lite signatures and the CSR bank."""
