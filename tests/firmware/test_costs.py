"""The CPU cost tables (firmware/costs.py): each cost charged to its named field, an ideal CPU
charging nothing, bad costs refused."""

from __future__ import annotations

import pytest
from driver_fakes import (
    make,
    run,
)

from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    IrqStrategy,
)


def test_costs_are_charged_to_their_named_fields():
    async def body():
        names = CpuCosts.cost_names()
        # A distinct cost per field, so a charge to the wrong name cannot pass.
        costs = CpuCosts(**{name: float(i + 1) for i, name in enumerate(names)})
        driver, p, device, _ = await make(
            costs, strategy=IrqStrategy("eop"), tx_ring=32, rx_ring=8, rx_buf=128
        )
        p.cycles.clear()
        reads, writes = driver.stats.mmio_reads, driver.stats.mmio_writes

        fragments = [b"a" * 100, b"b" * 50, b"c" * 7]
        await driver.xmit(fragments)
        assert p.cycles["tx_per_packet"] == costs.tx_per_packet
        assert p.cycles["tx_per_fragment_map"] == 3 * costs.tx_per_fragment_map
        assert p.cycles["tx_per_descriptor"] == 3 * costs.tx_per_descriptor

        device.complete_tx(irq=False)
        await driver.tx_clean()
        assert p.cycles["tx_clean_per_descriptor"] == 3 * costs.tx_clean_per_descriptor

        device.receive(bytes(300), irq=False)  # three 128-byte buffers
        await driver.rx_poll(8)
        assert p.cycles["rx_per_descriptor"] == 3 * costs.rx_per_descriptor
        assert p.cycles["rx_per_packet"] == costs.rx_per_packet
        assert p.cycles["per_byte_copy"] == 300 * costs.per_byte_copy

        await driver.napi_poll(64)
        assert p.cycles["napi_poll_overhead"] == costs.napi_poll_overhead

        n_reads = driver.stats.mmio_reads - reads
        n_writes = driver.stats.mmio_writes - writes
        assert p.cycles["mmio_read"] == n_reads * costs.mmio_read
        assert p.cycles["mmio_write"] == n_writes * costs.mmio_write
        assert set(p.cycles) <= set(names)

    run(body())


def test_ideal_cpu_charges_nothing_and_costs_are_validated():
    async def body():
        driver, p, device, _ = await make(tx_ring=8, rx_ring=4)
        await driver.xmit([b"x" * 64])
        device.complete_tx()
        await driver.isr()
        assert sum(p.cycles.values()) == 0

    run(body())
    with pytest.raises(ValueError, match="-1"):
        CpuCosts(mmio_read=-1)
