"""net_dim's rules as firmware/dim.py writes them out: measurements every DIM_NEVENTS
interrupts, better/same/worse on bytes, packets, then interrupts, and the walk over the
profile table (right while better, turn when not, park on top, park tired)."""

import pytest
from driver_fakes import (
    make,
    run,
)

from macdma.firmware import regs
from macdma.firmware.dim import DIM_NEVENTS, DIM_RX_PROFILES, DimSample, NetDim
from macdma.firmware.driver import (
    IrqStrategy,
)


class Feed:
    """Cumulative counters fed to a NetDim one measurement (DIM_NEVENTS events) at a time."""

    def __init__(self, dim: NetDim):
        self.dim = dim
        self.t_ns, self.events, self.packets, self.bytes = 0.0, 0, 0, 0
        dim.sample(DimSample(0.0, 0, 0, 0))

    def measure(self, bytes_per_ms: float, packets_per_ms: float, events: int = DIM_NEVENTS):
        """One measurement lasting events / (events per ms) at the given rates."""
        span_ms = 1.0
        self.t_ns += span_ms * 1e6
        self.events += events
        self.packets += round(packets_per_ms * span_ms)
        self.bytes += round(bytes_per_ms * span_ms)
        return self.dim.sample(DimSample(self.t_ns, self.events, self.packets, self.bytes))


def test_no_decision_before_nevents_interrupts():
    dim = NetDim()
    dim.sample(DimSample(0.0, 0, 0, 0))
    assert not dim.sample(DimSample(1e6, DIM_NEVENTS - 1, 1000, 1_000_000))
    assert dim.decisions == 0 and dim.profile_index == 0
    assert dim.sample(DimSample(2e6, DIM_NEVENTS, 1000, 1_000_000))  # first: leave parking
    assert dim.profile_index == 1 and dim.state == "going_right"


def test_steps_right_while_better_and_parks_at_the_edge():
    dim = NetDim()
    feed = Feed(dim)
    rate = 100_000.0
    for _ in range(len(DIM_RX_PROFILES)):  # four steps right, then the edge
        feed.measure(rate, rate / 1000)
        rate *= 1.5  # every measurement significantly better
    assert dim.profile_index == len(DIM_RX_PROFILES) - 1
    assert dim.state == "parking_on_top"


def test_turns_when_worse_and_parks_on_top_when_the_step_back_is_better():
    dim = NetDim()
    feed = Feed(dim)
    feed.measure(100_000, 100)  # leave parking: 0 -> 1
    feed.measure(150_000, 150)  # better: 1 -> 2
    feed.measure(200_000, 200)  # better: 2 -> 3
    assert dim.profile_index == 3
    feed.measure(100_000, 100)  # worse: turn left, 3 -> 2
    assert (dim.state, dim.profile_index) == ("going_left", 2)
    feed.measure(150_000, 150)  # the step back was better: profile 2 is the top
    assert dim.state == "parking_on_top" and dim.profile_index == 2
    assert not feed.measure(150_000, 150)  # the same load: stays parked
    assert feed.measure(500_000, 500)  # the load changed: walks again (left from 2)
    assert (dim.state, dim.profile_index) == ("going_left", 1)


def test_fewer_interrupts_for_the_same_traffic_is_better():
    dim = NetDim()
    feed = Feed(dim)
    feed.measure(100_000, 100)  # 0 -> 1
    # same bytes and packets, but the 64 events took twice as long: half the IRQ rate
    dim.sample(DimSample(feed.t_ns + 2e6, feed.events + DIM_NEVENTS, feed.packets + 200,
                         feed.bytes + 200_000))  # fmt: skip
    assert (dim.state, dim.profile_index) == ("going_right", 2)


def test_an_even_load_ping_pongs_then_parks_tired():
    dim = NetDim()
    feed = Feed(dim)
    for _ in range(2 * len(DIM_RX_PROFILES) + 1):
        feed.measure(100_000, 100)  # always the same: turn at every measurement
    assert dim.state == "parking_tired"
    parked = dim.profile_index
    for _ in range(2 * len(DIM_RX_PROFILES) - 1):
        assert not feed.measure(100_000, 100)
    assert dim.profile_index == parked
    assert feed.measure(100_000, 100)  # tired no more: walks again


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="at least one"):
        NetDim(())
    with pytest.raises(ValueError, match="profile_index 5 is outside"):
        NetDim(DIM_RX_PROFILES, profile_index=5)


def test_the_axienet_dim_table_starts_at_its_second_profile_and_counts_rx_interrupts():
    """axienet's DIM: frames 1, 4, 16, 64, 255 at a fixed 16 µs, from (4, 16); its events
    are RX interrupts, so TX-only interrupts do not move a measurement along."""

    async def body():
        stock, p0, _, _ = await make(strategy=IrqStrategy("dim"), tx_ring=16, rx_ring=8)
        assert stock.dim is not None and stock.dim.profile == DIM_RX_PROFILES[0]
        driver, p, device, _ = await make(
            strategy=IrqStrategy("dim"), dim_table="axienet", tx_ring=16, rx_ring=8
        )
        assert driver.dim is not None
        assert driver.dim.profiles == ((1, 16), (4, 16), (16, 16), (64, 16), (255, 16))
        assert driver.dim.profile == (4, 16)
        rx_coalesce = p.writes_to(regs.IRQ_RX_COALESCE)[-1]
        assert (rx_coalesce & regs.IRQ_RX_COALESCE_FRAMES_MASK) >> (
            regs.IRQ_RX_COALESCE_FRAMES_SHIFT
        ) == 4
        await driver.xmit([b"t" * 100])
        device.complete_tx()
        await driver.isr()  # TX done only
        device.receive(bytes(100))
        await driver.isr()  # RX done
        assert (driver.stats.irqs, driver.stats.rx_irqs) == (2, 1)

    run(body())
