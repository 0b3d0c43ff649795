"""Property-based tests (hypothesis) of the driver model's ring accounting: any interleaving
of xmit, device completions, tx_clean, frames arriving, rx_poll and error recovery keeps
the rings' indices, the descriptors' own bits and the frame counts consistent.

The device is tests/firmware/driver_fakes.py's scripted fake; no simulator runs.
"""

from __future__ import annotations

from driver_fakes import FakeDevice, FakePlatform, ring_desc, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from macdma.firmware import regs
from macdma.firmware.driver import DriverConfig, IrqStrategy, MacDmaDriver

TX_RING, RX_RING, RX_BUF = 16, 8, 128

operations = st.lists(
    st.one_of(
        st.tuples(st.just("xmit"), st.integers(1, 4)),
        st.tuples(st.just("complete_tx"), st.integers(1, 6)),
        st.tuples(st.just("tx_clean"), st.integers(1, 4)),
        st.tuples(st.just("receive"), st.integers(1, 3 * RX_BUF)),
        st.tuples(st.just("rx_poll"), st.integers(1, 4)),
        st.tuples(st.just("tx_error"), st.just(0)),
        st.tuples(st.just("rx_error"), st.just(0)),
    ),
    max_size=60,
)


def _in_window(index: int, start: int, end: int, size: int) -> bool:
    """Whether ring slot *index* lies in ``[start, end)`` going round a ring of *size*."""
    return (index - start) % size < (end - start) % size


def check_invariants(driver: MacDmaDriver, platform: FakePlatform, device: FakeDevice, counts):
    tx, rx, cfg = driver.tx, driver.rx, driver.config
    assert tx.in_flight() + tx.unused() == tx.size - 1
    assert rx.in_flight() + rx.unused() == rx.size - 1
    # TX: own exactly on the slots posted and not yet completed by the device.
    for index in range(tx.size):
        own = ring_desc(platform, regs.TX_RING_BASE, index).own
        assert own == _in_window(index, device.tx_head, tx.next_to_use, tx.size), index
    # Every frame handed over is reaped, dropped by a recovery, or still in the ring.
    in_ring = sum(1 for buf in tx.buffers if buf.eop_index is not None)
    stats = driver.stats
    assert counts["xmit"] == stats.tx_packets + stats.tx_dropped + in_ring
    assert not driver.queue_stopped or tx.unused() < cfg.wake_threshold
    assert driver.queue_stopped or tx.unused() >= cfg.max_frags
    # RX: own exactly on the buffers posted and not yet written by the device.
    for index in range(rx.size):
        own = ring_desc(platform, regs.RX_RING_BASE, index).own
        assert own == _in_window(index, device.rx_head, rx.next_to_use, rx.size), index
    # Every frame the device accepted is delivered, dropped by a recovery or still waiting.
    waiting = sum(
        1
        for i in range(rx.size)
        if _in_window(i, rx.next_to_clean, device.rx_head, rx.size)
        and ring_desc(platform, regs.RX_RING_BASE, i).eop
    )
    delivered = stats.rx_packets + stats.rx_errors
    assert counts["accepted"] == delivered + stats.rx_dropped + waiting


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_any_interleaving_keeps_rings_and_counts_consistent(ops):
    async def body():
        platform = FakePlatform()
        device = FakeDevice(platform)
        config = DriverConfig(
            tx_ring=TX_RING,
            rx_ring=RX_RING,
            rx_buf=RX_BUF,
            max_frags=4,
            strategy=IrqStrategy.parse("eop"),
        )
        driver = MacDmaDriver(platform, config, lambda frame, ok, meta: None)
        await driver.open()
        counts = {"xmit": 0, "accepted": 0}
        for op, n in ops:
            if op == "xmit":
                counts["xmit"] += await driver.xmit([bytes([n]) * 20] * n)
            elif op == "complete_tx":
                device.complete_tx(n, irq=False)
            elif op == "tx_clean":
                await driver.tx_clean(n)
            elif op == "receive":
                used = device.receive(bytes(n), irq=False) if _room(device, driver, n) else 0
                counts["accepted"] += used > 0
            elif op == "rx_poll":
                await driver.rx_poll(n)
            elif op in ("tx_error", "rx_error"):
                device.halt(op[:2], regs.DmaErrorCode.DATA_READ_BUS_ERROR)
                await driver.isr()
            check_invariants(driver, platform, device, counts)

    run(body())


def _room(device: FakeDevice, driver: MacDmaDriver, length: int) -> bool:
    """Whether the fake has the owned buffers for a frame of *length* bytes (it takes a
    frame whole or, with no buffer at HEAD, drops it and counts RX_DROPS)."""
    rx = driver.rx
    owned = (rx.next_to_use - device.rx_head) % rx.size
    needed = -(-length // rx.buffer_bytes)
    return owned >= needed or owned == 0
