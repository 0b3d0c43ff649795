"""The device of the driver model (firmware/driver.py) against a scripted fake device
(tests/firmware/driver_fakes.py): open and close, the ISR and NAPI, error recovery and the
device reset, alignment copies. Pure Python and fast: no simulator. Its parts have their
own test modules beside this one: the queues (test_tx_queue.py, test_rx_queue.py), MDIO,
moderation, the timers, the configuration, caches and costs.

The fake platform keeps memory in a bytearray, registers in a dict and sums charged cycles
per cost name; :class:`FakeDevice` plays the DMA engine on request (clears own, fills the
write-back fields, raises IRQ causes). The test drives the driver with asyncio; the driver
itself never imports it.
"""

from __future__ import annotations

import asyncio

import pytest
from driver_fakes import (
    DONE,
    ERRORS,
    assert_own_written_last,
    make,
    ring_desc,
    run,
    settle,
)

from macdma.firmware import regs
from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    IrqStrategy,
)

# -- open ----------------------------------------------------------------------------------


def test_open_programs_registers_from_config_and_posts_rx_buffers():
    async def body():
        driver, p, _, _ = await make(
            tx_ring=32,
            rx_ring=8,
            rx_buf=256,
            burst_beats=64,
            prefetch=5,
            sys_clk_mhz=125,
            irq_min_interval_us=125,
            dma_poll_us=7,
            strategy=IrqStrategy.parse("coalesce:frames=8,us=50"),
        )
        r = p.regs
        assert r[regs.TX_RING_SIZE] == 32 and r[regs.RX_RING_SIZE] == 8
        assert r[regs.TX_RING_BASE] % 16 == 0 and r[regs.RX_RING_BASE] % 16 == 0
        assert r[regs.TX_BURST_BEATS] == r[regs.RX_BURST_BEATS] == 64
        assert r[regs.TX_PREFETCH] == r[regs.RX_PREFETCH] == 5
        assert r[regs.TX_POLL_US] == r[regs.RX_POLL_US] == 7
        mode = int(regs.IrqMode.COALESCE)
        assert r[regs.IRQ_MODE] == mode | mode << regs.IRQ_MODE_RX_MODE_SHIFT
        assert r[regs.IRQ_TX_COALESCE] == r[regs.IRQ_RX_COALESCE] == 8 | 50 << 16
        assert r[regs.IRQ_SYS_CLK_MHZ] == 125
        assert r[regs.IRQ_MIN_INTERVAL] == 125
        assert r[regs.MAC_CTRL] == regs.MAC_CTRL_TX_ENABLE_MASK | regs.MAC_CTRL_RX_ENABLE_MASK
        assert r[regs.IRQ_ENABLE] == DONE | ERRORS
        assert r[regs.TX_CTRL] == r[regs.RX_CTRL] == regs.TX_CTRL_RUN_MASK
        # Both channels were reset first, run set last (after the RX doorbell).
        writes = [(off, v) for kind, off, v in p.mmio_log if kind == "w"]
        assert writes[0] == (regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
        assert writes[1] == (regs.RX_CTRL, regs.RX_CTRL_RESET_MASK)
        assert writes.index((regs.RX_TAIL, 7)) < writes.index((regs.RX_CTRL, 1))
        assert writes[-2:] == [(regs.TX_CTRL, 1), (regs.RX_CTRL, 1)]
        # rx_ring - 1 buffers posted with own, word 3 stored after words 0..2.
        assert r[regs.RX_TAIL] == 7
        addresses = set()
        for i in range(7):
            d = ring_desc(p, regs.RX_RING_BASE, i)
            assert d.own and d.length == 256 and not d.ioc
            addresses.add(d.addr)
            assert_own_written_last(p, r[regs.RX_RING_BASE] + 16 * i)
        assert len(addresses) == 7
        assert not ring_desc(p, regs.RX_RING_BASE, 7).own
        assert driver.stats.mmio_writes == len(writes)
        # Each channel's STATUS read once after the resets (the reset is over: 0), then
        # TX_FRAMES (what a TX recovery compares with), before anything else is programmed.
        assert driver.stats.mmio_reads == 3
        log = [(kind, off) for kind, off, _ in p.mmio_log]
        assert log[2:5] == [("r", regs.TX_STATUS), ("r", regs.RX_STATUS), ("r", regs.TX_FRAMES)]

    run(body())


def test_napi_with_tx_coalescing_still_masks_both_causes_and_cleans_tx_in_the_poll():
    async def body():
        strategy = IrqStrategy("napi", tx_coalesce_frames=2, tx_coalesce_us=50)
        driver, p, device, _ = await make(strategy=strategy, tx_ring=64, rx_ring=8)
        for _ in range(2):
            await driver.xmit([bytes(100)])
        device.complete_tx(2)  # the second completion reaches the threshold: TX done
        await driver.isr()
        assert p.regs[regs.IRQ_ENABLE] == ERRORS, "the ISR masks both done causes"
        assert driver.napi_scheduled and driver.stats.tx_packets == 0
        await driver.napi_poll()
        assert driver.stats.tx_packets == 2, "the poll reaps TX"
        assert p.regs[regs.IRQ_ENABLE] == DONE | ERRORS

    run(body())


def test_per_desc_posts_rx_buffers_with_ioc():
    async def body():
        _, p, _, _ = await make(strategy=IrqStrategy("per-desc"), tx_ring=32, rx_ring=4)
        assert all(ring_desc(p, regs.RX_RING_BASE, i).ioc for i in range(3))

    run(body())


# -- RX ------------------------------------------------------------------------------------


def test_close_reads_hardware_drop_counters():
    async def body():
        driver, p, _, _ = await make(tx_ring=8, rx_ring=4)
        p.regs[regs.RX_DROPS] = 3
        p.regs[regs.RX_FIFO_OVERFLOWS] = 2
        await driver.close()
        assert driver.stats.rx_dropped_hw == 5
        assert p.regs[regs.TX_CTRL] == p.regs[regs.RX_CTRL] == 0
        assert p.regs[regs.IRQ_ENABLE] == 0

    run(body())


# -- interrupts, NAPI, polling -------------------------------------------------------------


def test_eop_isr_acks_and_cleans_both_directions():
    async def body():
        driver, p, device, received = await make(strategy=IrqStrategy("eop"), rx_ring=8)
        await driver.xmit([b"t" * 64])
        device.complete_tx()
        device.receive(b"r" * 64)
        await driver.isr()
        assert p.writes_to(regs.IRQ_STATUS)[-1] == DONE
        assert p.regs[regs.IRQ_STATUS] == 0
        assert driver.stats.tx_packets == 1 and len(received) == 1
        assert driver.stats.irqs == 1

    run(body())


def test_napi_isr_masks_and_poll_unmasks_only_below_budget():
    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy("napi", budget=4), rx_ring=16, rx_buf=64
        )
        device.receive(bytes(70))
        device.receive(bytes(70))
        await driver.isr()
        assert p.regs[regs.IRQ_ENABLE] == ERRORS  # done causes masked
        assert driver.napi_scheduled and received == []
        assert await driver.napi_poll() == 2
        assert not driver.napi_scheduled
        assert p.regs[regs.IRQ_ENABLE] == DONE | ERRORS

        for _ in range(6):
            device.receive(bytes(70))
        await driver.isr()
        assert await driver.napi_poll() == 4  # budget used up: stay in polling
        assert driver.napi_scheduled and p.regs[regs.IRQ_ENABLE] == ERRORS
        assert await driver.napi_poll() == 2
        assert not driver.napi_scheduled and p.regs[regs.IRQ_ENABLE] == DONE | ERRORS
        assert len(received) == 8 and driver.stats.polls == 3

    run(body())


def test_napi_run_end_to_end_through_the_interrupt_line():
    async def body():
        costs = CpuCosts(irq_entry_exit=500)
        driver, p, device, received = await make(
            costs, strategy=IrqStrategy("napi", budget=2), rx_ring=16, rx_buf=64
        )
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        for n in range(5):
            device.receive(bytes([n]) * 70)
        await driver.xmit([b"a" * 60, b"b" * 60])
        device.complete_tx()
        await settle()
        assert [f[0][0] for f in received] == [0, 1, 2, 3, 4]
        assert driver.stats.tx_packets == 1
        assert driver.stats.irqs == 1 and p.cycles["irq_entry_exit"] == 500
        assert driver.stats.polls == 3  # 2 + 2 + 1: the third poll completes NAPI
        assert p.regs[regs.IRQ_ENABLE] == DONE | ERRORS and not p.irq_line()
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


# -- errors --------------------------------------------------------------------------------


def test_tx_error_irq_resets_the_channel_and_recovers():
    async def body():
        driver, p, device, _ = await make(
            strategy=IrqStrategy("eop"), tx_ring=16, rx_ring=4, max_frags=10
        )
        for _ in range(3):
            assert await driver.xmit([b"e" * 60, b"f" * 10])
        assert driver.queue_stopped  # 9 free < 10
        device.complete_tx(2, irq=False)
        device.halt("tx", regs.DmaErrorCode.DATA_READ_BUS_ERROR)
        await driver.isr()
        [record] = driver.errors
        assert record.channel == "tx" and record.code == regs.DmaErrorCode.DATA_READ_BUS_ERROR
        ctrl = p.writes_to(regs.TX_CTRL)
        assert ctrl[-2:] == [regs.TX_CTRL_RESET_MASK, regs.TX_CTRL_RUN_MASK]
        assert driver.stats.tx_packets == 1 and driver.stats.tx_dropped == 2
        assert driver.stats.dma_errors == 1
        assert not driver.queue_stopped and driver.stats.queue_wakes == 1
        assert all(not ring_desc(p, regs.TX_RING_BASE, i).own for i in range(16))
        assert p.regs[regs.TX_TAIL] == 0 and driver.tx.next_to_use == 0
        # Traffic resumes from slot 0, where the reset put HEAD.
        assert await driver.xmit([b"g" * 60])
        assert device.complete_tx() == 1 and device.sent[-1] == b"g" * 60
        assert await driver.tx_clean() == 1

    run(body())


def test_rx_error_irq_discards_the_cut_frame_and_reposts_the_ring():
    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy("eop"), tx_ring=8, rx_ring=8, rx_buf=64
        )
        device.receive(b"A" * 70, irq=False)  # complete before the halt: delivered
        device.receive(bytes(200), complete=False, irq=False)  # cut by the halt: discarded
        device.halt("rx", regs.DmaErrorCode.DATA_WRITE_BUS_ERROR)
        await driver.isr()
        assert driver.errors[0].channel == "rx"
        assert driver.errors[0].code == regs.DmaErrorCode.DATA_WRITE_BUS_ERROR
        assert [f[0] for f in received] == [b"A" * 70]
        assert driver.stats.rx_dropped == 1
        assert p.writes_to(regs.RX_CTRL)[-2:] == [regs.RX_CTRL_RESET_MASK, 1]
        assert p.regs[regs.RX_TAIL] == 7
        assert all(ring_desc(p, regs.RX_RING_BASE, i).own for i in range(7))
        device.receive(b"B" * 70)
        await driver.isr()
        assert [f[0] for f in received] == [b"A" * 70, b"B" * 70]

    run(body())


def test_device_reset_folds_counters_drops_what_was_queued_and_reopens():
    """reset_device: the counters are folded before the reset (which zeroes them), frames
    the DMA completed are reaped or delivered, the rest dropped and counted, and the
    device is opened again with traffic resuming from slot 0."""

    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy("eop"), tx_ring=16, rx_ring=8, rx_buf=64, max_frags=2
        )
        dropped_slots = []
        driver.on_tx_dropped = dropped_slots.append
        for n in range(3):
            assert await driver.xmit([bytes([n]) * 60])
        device.complete_tx(1, irq=False)
        device.receive(b"A" * 70, irq=False)  # written back before the reset: delivered
        device.receive(bytes(200), complete=False, irq=False)  # half-received: dropped
        p.regs[regs.RX_DROPS] = 4
        p.regs[regs.TX_DROPS] = 2
        p.regs[regs.STATS_TX_FRAMES_GOOD] = 7
        seen = {}

        async def assert_reset():
            seen["irq_enable"] = p.regs[regs.IRQ_ENABLE]
            seen["queue_stopped"] = driver.queue_stopped
            for offset in (regs.RX_DROPS, regs.TX_DROPS, regs.STATS_TX_FRAMES_GOOD):
                p.regs[offset] = 0  # the reset zeroes the counters
            device.reset("tx")
            device.reset("rx")

        await driver.reset_device(assert_reset)
        assert seen == {"irq_enable": 0, "queue_stopped": True}
        assert driver.hw_totals["RX_DROPS"] == 4 and driver.hw_totals["TX_DROPS"] == 2
        assert driver.hw_totals["STATS_TX_FRAMES_GOOD"] == 7 and driver.device_resets == 1
        assert driver.stats.tx_packets == 1 and driver.stats.tx_dropped == 2
        assert dropped_slots == [1, 2]
        assert [f[0] for f in received] == [b"A" * 70] and driver.stats.rx_dropped == 1
        assert driver.is_open and not driver.queue_stopped
        assert p.regs[regs.IRQ_ENABLE] == driver.strategy.irq_enable
        p.regs[regs.RX_DROPS] = 1  # counted after the reset: totals add the fold
        await driver.read_hw_stats()
        assert driver.stats.rx_dropped_hw == 5
        assert await driver.xmit([b"g" * 60])
        assert device.complete_tx() == 1 and device.sent[-1] == b"g" * 60

    run(body())


def test_cfg_error_is_recorded_and_acked():
    async def body():
        driver, p, _, _ = await make(strategy=IrqStrategy("eop"), tx_ring=8, rx_ring=4)
        p.regs[regs.ID_CFG_ERROR] = regs.ID_CFG_ERROR_TX_BURST_BEATS_MASK
        p.raise_cause(regs.IRQ_STATUS_CFG_ERROR_MASK)
        await driver.isr()
        assert driver.stats.cfg_errors == 1
        assert driver.errors[0].status == regs.ID_CFG_ERROR_TX_BURST_BEATS_MASK
        assert p.regs[regs.ID_CFG_ERROR] == 0 and not p.irq_line()

    run(body())


# -- validation ----------------------------------------------------------------------------


def test_driver_imports_no_scheduler():
    import ast
    import pathlib

    import macdma.firmware as fw

    for path in pathlib.Path(fw.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("asyncio", "cocotb"), (path, name)


# -- alignment copies: the TX bounce buffer and the RX fix-up --------------------------------


@pytest.mark.parametrize(("tx_bounce", "rx_fixup"), [(True, True), (False, True), (False, False)])
def test_alignment_copies_cost_what_they_copy(tx_bounce, rx_fixup):
    """arge-align's three steps: bounce + fix-up, fix-up only, neither. A bounce copies
    each TX fragment (cache-hot: CPU cycles only); the fix-up copies each received frame,
    reading it from memory (its lines were invalidated for the DMA)."""

    async def body():
        costs = CpuCosts(per_byte_memcpy=2.0)
        driver, p, device, received = await make(
            costs, tx_bounce=tx_bounce, rx_fixup=rx_fixup, tx_ring=16, rx_ring=8
        )
        await driver.xmit([b"h" * 54, b"p" * 1000])
        device.receive(bytes(600), irq=False)
        await driver.rx_poll(8)
        assert received and received[0][0] == bytes(600)  # the copy changes no byte
        copied = (1054 if tx_bounce else 0) + (600 if rx_fixup else 0)
        assert p.cycles["per_byte_memcpy"] == 2.0 * copied
        assert p.traffic["rx_fixup"] == [600 if rx_fixup else 0, 0]
        assert (driver.stats.tx_bounced, driver.stats.rx_fixups) == (
            2 if tx_bounce else 0,
            1 if rx_fixup else 0,
        )

    run(body())
