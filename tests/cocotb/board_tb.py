"""cocotb tests of ``macdma_board`` (the board design with RGMII pins, hdl/boards/sim_top.py)
driven like a board on a desk: the unchanged firmware driver (``MacDmaDriver``) runs over
``SerialPlatform`` in a bridge thread, every register and RAM access crosses the UART
bridge, and cocotbext-eth's RGMII models are the PHY.

Each test resets the board and opens a fresh driver, so each stands alone. The host side
runs in :meth:`BoardBench.run_host`; what it needs from the simulation (a frame from the
PHY, the time) it gets through ``cocotb.task.resume``.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from types import SimpleNamespace

import cocotb
from board_bench import BoardBench, now_ns
from cocotb.task import resume
from cocotb.triggers import RisingEdge, with_timeout
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import RxErrorCause
from macdma.firmware.driver import DriverConfig, IrqStrategy, MacDmaDriver
from macdma.hdl.boards.sim_top import DEFAULT_SYS_CLK_HZ
from macdma.hdl.boards.uart_bridge import NOTIFY_IRQ
from macdma.hdl.mac.mdio import MDIO_PIN_NAMES

# tests/models/mdio_phy.py, the clause 22 PHY model of the Amaranth tests, runs here through a
# small cocotb adapter (CocotbContext); tests/ is not on the simulator's path otherwise.
sys.path.append(str(Path(__file__).resolve().parents[1] / "models"))
from mdio_phy import OP_READ, OP_WRITE, MdioPhy  # noqa: E402

PREAMBLE_SFD = b"\x55" * 7 + b"\xd5"
WIRE_TIMEOUT_US = 50  # a frame the DMA has taken leaves the pins well within this


def payload(length: int, seed: int) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def driver_config(strategy: str) -> DriverConfig:
    """Small rings: descriptors, RX buffers and TX bounce buffers fit the 16 KiB RAM. At
    most two fragments per frame, so two frames fit the 4-entry TX ring at once."""
    return DriverConfig(
        tx_ring=4,
        rx_ring=4,
        rx_buf=128,
        prefetch=2,
        max_frags=2,
        strategy=IrqStrategy.parse(strategy),
        sys_clk_mhz=round(DEFAULT_SYS_CLK_HZ / 1e6),
    )


async def started(dut) -> BoardBench:
    bench = BoardBench(dut)
    await bench.start()
    return bench


@cocotb.test()
async def driver_transmits_frames_on_the_rgmii_pins(dut):
    """xmit of a one-fragment and a two-fragment frame: both leave on TXD/TX_CTL with
    preamble, SFD, the payload and a good FCS, as cocotbext-eth's RgmiiSink reads them on
    both TXC edges; tx_clean reaps both and the MAC's good-frame counter says 2."""
    bench = await started(dut)
    single = payload(60, seed=1)
    header, body = payload(14, seed=2), payload(53, seed=3)  # 67 bytes: odd length

    async def host(platform):
        driver = MacDmaDriver(platform, driver_config("polling"))
        await driver.open()
        assert await driver.xmit([single])
        assert await driver.xmit([header, body])
        for _ in range(10):
            await driver.tx_clean()
            if driver.stats.tx_packets == 2:
                break
        good = await platform.mmio_read(regs.STATS_TX_FRAMES_GOOD)
        return driver, good

    driver, tx_frames_good = await bench.run_host(host)
    assert driver.stats.tx_packets == 2, driver.stats
    assert tx_frames_good == 2
    for expected in (single, header + body):
        frame = await with_timeout(bench.phy_tx.recv(), WIRE_TIMEOUT_US, "us")
        assert frame.get_preamble() == PREAMBLE_SFD, frame
        assert frame.get_payload() == expected, frame
        assert frame.check_fcs(), frame
        assert frame.error is None, f"TX_ER during the frame: {frame}"
    assert bench.phy_tx.empty(), "more frames on the wire than were sent"
    assert bench.uart.sink.empty(), "bytes from the board that no reply accounted for"


@cocotb.test()
async def driver_receives_a_good_frame_and_a_bad_fcs_is_flagged(dut):
    """RgmiiSource sends a good frame and one with a corrupted FCS. rx_poll delivers the
    good one intact and marked good; the bad one reaches on_receive only marked bad with
    cause FCS (the SoC delivers bad frames flagged, docs/soc.md), and the MAC statistics
    read over the bridge count one good frame and one FCS error."""
    bench = await started(dut)
    good_payload = payload(72, seed=4)
    bad_payload = payload(60, seed=5)
    bad = GmiiFrame.from_payload(bad_payload)
    bad.data[-1] ^= 0xFF
    received = []

    async def host(platform):
        driver = MacDmaDriver(
            platform,
            driver_config("polling"),
            on_receive=lambda frame, ok, meta: received.append((frame, ok, meta)),
        )
        await driver.open()
        resume(bench.phy_rx.send)(GmiiFrame.from_payload(good_payload))
        resume(bench.phy_rx.send)(bad)
        resume(bench.phy_rx.wait)()
        for _ in range(10):
            await driver.rx_poll(None)
            if len(received) >= 2:
                break
        stats = {
            name: await platform.mmio_read(getattr(regs, name))
            for name in ("STATS_RX_FRAMES_GOOD", "STATS_RX_FRAMES_BAD", "STATS_RX_FCS_ERRORS")
        }
        return driver, stats

    driver, stats = await bench.run_host(host)
    assert [(frame, ok) for frame, ok, _ in received[:1]] == [(good_payload, True)]
    assert len(received) == 2, received
    frame, ok, meta = received[1]
    assert not ok and meta.error and meta.rx_error == RxErrorCause.FCS, meta
    assert frame == bad_payload
    assert driver.stats.rx_packets == 1 and driver.stats.rx_errors == 1, driver.stats
    assert stats == {"STATS_RX_FRAMES_GOOD": 1, "STATS_RX_FRAMES_BAD": 1, "STATS_RX_FCS_ERRORS": 1}


@cocotb.test()
async def irq_notification_wakes_the_host(dut):
    """With interrupts enabled (EOP mode), the host waits in SerialPlatform.wait_irq with
    nothing pending; a frame from the PHY raises RX_DONE, the bridge sends '!', and that
    byte is what wakes the host, after the frame. The ISR then reaps the frame."""
    bench = await started(dut)
    frame_payload = payload(64, seed=6)
    received = []

    async def host(platform):
        driver = MacDmaDriver(
            platform,
            driver_config("eop"),
            on_receive=lambda frame, ok, meta: received.append((frame, ok)),
        )
        await driver.open()
        # Later than wait_irq's two register reads (about 16 us), so the host is blocked
        # on the serial port when the interrupt comes.
        resume(bench.send_later)(GmiiFrame.from_payload(frame_payload), 60_000)
        await platform.wait_irq()
        woke = platform.bridge.port.reads[-1]
        await driver.isr()
        return driver, woke

    driver, (woke_ns, woke_bytes) = await bench.run_host(host)
    assert woke_bytes == bytes([NOTIFY_IRQ]), "wait_irq returned without a '!'"
    assert bench.rx_sent_ns and woke_ns > bench.rx_sent_ns[0], (woke_ns, bench.rx_sent_ns)
    assert received == [(frame_payload, True)]
    assert driver.stats.irqs == 1 and driver.stats.rx_packets == 1, driver.stats


class CocotbContext:
    """The part of Amaranth's testbench context that :class:`MdioPhy` uses, on cocotb
    handles: ``tick`` is a rising edge of the system clock."""

    def __init__(self, clock):
        self.clock = clock

    def get(self, handle) -> int:
        return int(handle.value)

    def set(self, handle, value: int) -> None:
        handle.value = value

    def tick(self):
        return RisingEdge(self.clock)


@cocotb.test()
async def driver_reads_and_writes_phy_registers_over_mdio(dut):
    """mdio_read/mdio_write through the bridge and the SoC's MDIO master reach a clause 22
    PHY model on the mdc/mdio pins: the identifier registers read back, a write lands in
    the PHY and reads back, and the PHY saw exactly those frames."""
    bench = await started(dut)
    pins = SimpleNamespace(**{pin: getattr(dut, name) for pin, name in MDIO_PIN_NAMES.items()})
    phy = MdioPhy(pins, address=3, registers={2: 0x0141, 3: 0x0DD1})
    cocotb.start_soon(phy.process(CocotbContext(dut.clk)))

    async def host(platform):
        driver = MacDmaDriver(platform, driver_config("polling"))
        ids = [await driver.mdio_read(3, 2), await driver.mdio_read(3, 3)]
        await driver.mdio_write(3, 0, 0x1140)
        return ids, await driver.mdio_read(3, 0)

    started_ns = now_ns()
    ids, control = await bench.run_host(host)
    dut._log.info("MDIO: 4 frames in %.1f us", (now_ns() - started_ns) / 1000)
    assert ids == [0x0141, 0x0DD1]
    assert phy.registers[0] == 0x1140 and control == 0x1140
    assert [(f.op, f.phy, f.reg, f.data) for f in phy.frames] == [
        (OP_READ, 3, 2, 0x0141),
        (OP_READ, 3, 3, 0x0DD1),
        (OP_WRITE, 3, 0, 0x1140),
        (OP_READ, 3, 0, 0x1140),
    ]
    assert phy.contention == 0
