"""The CPU's stores reach host memory in order and take time, so a driver that stores
``own`` before the buffer address is caught (tests/cocotb/driver_order_tb.py)."""


def test_driver_store_order(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="driver_order_tb", sim=sim)
    assert (result.failed, result.passed) == (0, 2)
