"""The macdma register map: the one source of truth for every control/status register.

This module is data, written in the classes of :mod:`macdma.hdl.regmodel` (which explains
blocks, registers, field access kinds and composed names). From it are built:

* the CSR bank (:class:`macdma.hdl.bus.csr_bank.CsrBank`),
* the driver constants ``firmware/regs.py`` and the C header
  ``firmware/include/macdma_regs.h``,
* the documentation ``docs/registers.md``

(the last three by ``python -m macdma.sim.flows.regmap_gen``).
"""

from __future__ import annotations

from .counters import CHECKSUM_COUNTERS, FLOW_CONTROL_COUNTERS, RX_COUNTERS, TX_COUNTERS
from .regmodel import (
    Access,
    Block,
    Enumeration,
    EnumValue,
    Field,
    Register,
    RegisterMap,
    cfg_error_register,
)

__all__ = ["DMA_ERROR_CODE", "IRQ_MODE", "REGISTER_MAP", "RING_INDEX_BITS", "RING_SIZE_BITS"]


#: Width of HEAD and TAIL (a descriptor's index in its ring).
RING_INDEX_BITS = 12
#: Width of RING_SIZE: up to 1 << RING_INDEX_BITS (4096) descriptors.
RING_SIZE_BITS = RING_INDEX_BITS + 1

DMA_ERROR_CODE = Enumeration(
    "DmaErrorCode",
    (
        EnumValue("NONE", 0, "No error."),
        EnumValue("DESC_FETCH_BUS_ERROR", 1, "AXI error response while fetching a descriptor."),
        EnumValue("DATA_READ_BUS_ERROR", 2, "AXI error response while reading frame data."),
        EnumValue("DATA_WRITE_BUS_ERROR", 3, "AXI error response while writing frame data."),
        EnumValue("WRITEBACK_BUS_ERROR", 4, "AXI error response while writing a descriptor back."),
        EnumValue("ZERO_LENGTH_DESC", 5, "A descriptor owned by the DMA has buffer length 0."),
        EnumValue("RX_BUFFER_TOO_SMALL", 6, "An RX descriptor's buffer is shorter than 64 bytes."),
    ),
    "Why a DMA channel halted (STATUS.error_code).",
)

IRQ_MODE = Enumeration(
    "IrqMode",
    (
        EnumValue("PER_DESC", 0, "Set *_done for each descriptor written back with its IOC flag."),
        EnumValue(
            "EOP", 1, "Set *_done when the last descriptor of a frame (EOP) is written back."
        ),
        EnumValue("COALESCE", 2, "Set *_done after COALESCE.frames frames or COALESCE.timer_us."),
        EnumValue("NONE", 3, "The DMA never sets *_done: the driver polls the descriptors."),
    ),
    "When a DMA channel raises its *_done interrupt cause (IRQ_MODE).",
)

_COUNTER_DOC = "32-bit counter, wraps; cleared by reset only."


def _whole(
    name: str,
    offset: int,
    access: Access,
    doc: str,
    width: int = 32,
    write_strobe: bool = False,
    **field_args,
) -> Register:
    """A register holding a single field named like the register."""
    fld = Field(name.lower(), (0, width), access, doc=doc, **field_args)
    return Register(name, offset, (fld,), doc, write_strobe=write_strobe)


def _dma_channel_block(name: str, base: int, direction: str) -> Block:
    """TX and RX DMA channels share one layout; ``direction`` is "TX" or "RX"."""
    tx = direction == "TX"
    drops_doc = (
        "TX frames cut short on the wire (an underrun: a CTRL.reset flushed the TX FIFO "
        "under the frame, or cut-through data did not arrive in time) that the driver counts "
        "sent (written back, or counted in FRAMES), counted when the MAC reports the cut. A "
        "frame the channel itself ended with an error beat is not counted: its descriptor "
        "keeps own and the driver drops and counts it, so each lost frame counts once. "
        "STATS_TX_UNDERRUNS counts every cut on the wire."
        if tx
        else "RX frames lost because no descriptor was owned by the DMA: dropped whole, or "
        "truncated mid-frame (delivered with rx_truncated); a frame the RX FIFO had already "
        "cut short counts in FIFO_OVERFLOWS instead, so each lost frame counts once."
    )
    overflow_doc = (
        "Always 0 on TX."
        if tx
        else "RX frames the RX FIFO cut short (delivered with rx_truncated) or lost whole "
        "because it overflowed."
    )
    frames_doc = (
        "Frames the driver counts sent: EOP write-backs that landed OKAY (late ones, landing "
        "after a CTRL.reset, included) and, once a CTRL.reset is over (STATUS.resetting 0), "
        "the frames the MAC started whose EOP write-back never landed (their descriptors "
        "keep own: a driver reaps as sent as many of its oldest unreaped frames as FRAMES "
        "moved by beyond the frames it reaped)."
        if tx
        else "Frames completed (EOP write-back landed OKAY)."
    )
    discards_doc = (
        "Frames a CTRL.reset discarded from the TX FIFO after their EOP descriptor was "
        "written back (the driver counts them sent) and before the MAC took their first "
        "byte; a frame the MAC was sending ends with tx_er and is counted in DROPS instead."
        if tx
        else "Frames a CTRL.reset discarded after the channel took their first beat from the "
        "RX FIFO and before any of their descriptors was written back (the driver never "
        "sees them); a frame with a descriptor already written back is left to the driver "
        "(an SOP without its EOP), and one already counted as cut short (FIFO_OVERFLOWS, "
        "DROPS) is not counted again."
    )
    registers = (
        Register(
            "CTRL",
            0x00,
            (
                Field("run", (0, 1), "rw", doc="1: the channel processes descriptors."),
                Field(
                    "reset",
                    (1, 1),
                    "wo-pulse",
                    doc="Write 1: channel reset; clears the error code and halt, returns HEAD "
                    "to 0. The ring registers keep their values. TX also empties the TX FIFO "
                    "(a frame being sent ends with tx_er) and resumes 200 system clocks "
                    "later; STATUS.running reads 0 meanwhile.",
                ),
            ),
            "Channel control.",
        ),
        Register(
            "STATUS",
            0x04,
            (
                Field("running", (0, 1), "ro", doc="The channel is enabled and not halted."),
                Field("halted", (1, 1), "ro", doc="The channel stopped on an error."),
                Field(
                    "bad_tail",
                    (2, 1),
                    "ro",
                    doc="A TAIL write was not less than RING_SIZE and was ignored; sticky "
                    "until CTRL.reset.",
                ),
                Field(
                    "resetting",
                    (3, 1),
                    "ro",
                    doc="1 from a CTRL.reset until the channel has finished the AXI "
                    "transaction in flight and reset its state (TX: and the TX FIFO's flush "
                    "is over and FRAMES has counted what it left); post descriptors again "
                    "only once it reads 0 (a burst still in flight could land in them).",
                ),
                Field(
                    "error_code",
                    (4, 4),
                    "ro",
                    doc="Why the channel halted; cleared by CTRL.reset.",
                    enum=DMA_ERROR_CODE,
                ),
            ),
            "Channel status.",
        ),
        _whole(
            "RING_BASE",
            0x08,
            "rw",
            "Byte address of descriptor 0 of the ring in host memory; 16-byte aligned.",
            valid=range(0, 1 << 32, 16),
        ),
        _whole(
            "RING_SIZE",
            0x0C,
            "rw",
            "Number of descriptors in the ring (any count, not only powers of two); "
            "0 = not configured.",
            width=RING_SIZE_BITS,
            valid=(0, range(2, (1 << RING_INDEX_BITS) + 1)),
        ),
        _whole(
            "TAIL",
            0x10,
            "rw",
            "Index one past the last descriptor handed to the DMA; writing it rings the "
            f"doorbell. Every {RING_INDEX_BITS}-bit value is accepted here: the DMA engine "
            "ignores a value not less than RING_SIZE and sets STATUS.bad_tail.",
            width=RING_INDEX_BITS,
            write_strobe=True,
        ),
        _whole(
            "HEAD",
            0x14,
            "ro",
            "Index of the next descriptor the DMA will process.",
            RING_INDEX_BITS,
        ),
        _whole(
            "POLL_US",
            0x18,
            "rw",
            "Interval in µs at which the DMA re-reads the descriptor at HEAD without a "
            "doorbell; 0 = off.",
            width=16,
        ),
        _whole(
            "BURST_BEATS",
            0x1C,
            "rw",
            "Maximum AXI burst length in data beats.",
            width=9,
            reset=16,
            valid=range(1, 257),
        ),
        _whole(
            "PREFETCH",
            0x20,
            "rw",
            "Descriptors fetched per descriptor read; the hardware may clamp it to "
            "FEATURES.max_prefetch.",
            width=5,
            reset=1,
            valid=range(1, 17),
        ),
        _whole("DESC_FETCHED", 0x28, "ro", f"Descriptors fetched. {_COUNTER_DOC}"),
        _whole(
            "BURSTS",
            0x2C,
            "ro",
            "AXI bursts of frame data issued (TX: fragment reads; RX: buffer writes); "
            f"descriptor fetches and write-backs are not counted. {_COUNTER_DOC}",
        ),
        _whole("BYTES", 0x30, "ro", f"Frame data bytes moved. {_COUNTER_DOC}"),
        _whole("FRAMES", 0x34, "ro", f"{frames_doc} {_COUNTER_DOC}"),
        _whole("DROPS", 0x38, "ro", f"{drops_doc} {_COUNTER_DOC}"),
        _whole("FIFO_OVERFLOWS", 0x3C, "ro", f"{overflow_doc} {_COUNTER_DOC}"),
        _whole(
            "RESET_DISCARDS",
            0x40,
            "ro",
            f"{discards_doc} 16-bit counter, wraps; cleared by reset only "
            "(CTRL.reset does not clear it).",
            width=16,
        ),
    )
    return Block(name, base, registers, f"{direction} DMA channel.")


def _coalesce(name: str, offset: int, direction: str) -> Register:
    return Register(
        name,
        offset,
        (
            Field(
                "frames",
                (0, 8),
                "rw",
                reset=1,
                valid=range(1, 256),
                doc=f"Coalesce mode: raise {direction.lower()}_done after this many frames.",
            ),
            Field(
                "timer_restart",
                (8, 1),
                "rw",
                doc="0: the timer runs from the first uncounted frame (bounds the latency). "
                "1: every frame restarts it, so it fires timer_us µs after the last "
                "completion, like the Xilinx AXI DMA's IRQDelay (an idle timer).",
            ),
            Field(
                "timer_us",
                (16, 16),
                "rw",
                doc=f"Coalesce mode: raise {direction.lower()}_done this many µs after the "
                "first uncounted frame (or the last, see timer_restart); 0 = no timer.",
            ),
        ),
        f"{direction} interrupt coalescing (used when IRQ_MODE selects COALESCE).",
    )


def _irq_cause_fields(access: Access, doc: str) -> tuple[Field, ...]:
    causes = (
        ("tx_done", "TX descriptors completed (per IRQ_MODE.tx_mode)."),
        ("rx_done", "RX descriptors completed (per IRQ_MODE.rx_mode)."),
        ("tx_error", "The TX channel halted on an error."),
        ("rx_error", "The RX channel halted on an error."),
        ("cfg_error", "A register write was rejected (see CFG_ERROR)."),
    )
    return tuple(
        Field(cause, (bit, 1), access, doc=f"{doc}{cause_doc}")
        for bit, (cause, cause_doc) in enumerate(causes)
    )


def _flow_control_registers() -> tuple[Register, ...]:
    """802.3x PAUSE: the MAC_ADDR_* and MAC_FC_* registers of the MAC block."""
    return (
        _whole(
            "MAC_ADDR_LO",
            0x0C,
            "rw",
            "Station address, its last four bytes: 02:AA:BB:CC:DD:EE is 0xBBCCDDEE. The "
            "source of the PAUSE frames sent; the destination checked with "
            "MAC_FC_CTRL.check_ucast.",
        ),
        _whole(
            "MAC_ADDR_HI",
            0x10,
            "rw",
            "Station address, its first two bytes: 02:AA:BB:CC:DD:EE is 0x02AA.",
            width=16,
        ),
        Register(
            "MAC_FC_CTRL",
            0x14,
            (
                Field(
                    "rx_pause",
                    (0, 1),
                    "rw",
                    doc="1: received PAUSE frames (to 01-80-C2-00-00-01, EtherType 0x8808, "
                    "opcode 0x0001) stop the transmitter for their quanta, at a frame "
                    "boundary, and leave the RX stream.",
                ),
                Field(
                    "tx_pause",
                    (1, 1),
                    "rw",
                    doc="1: the MAC sends an XOFF when the RX FIFO reaches "
                    "MAC_FC_WATER.high (and while xoff is 1), refreshed every "
                    "MAC_FC_QUANTA.refresh quanta, and an XON once it drains below "
                    "MAC_FC_WATER.low; and a frame that finds no RX buffer posted waits "
                    "in the RX FIFO for one instead of being dropped (RX_DROPS).",
                ),
                Field(
                    "forward",
                    (2, 1),
                    "rw",
                    doc="1: recognised MAC control frames still go to the RX DMA.",
                ),
                Field(
                    "check_ucast",
                    (3, 1),
                    "rw",
                    doc="1: PAUSE frames sent to the station address (MAC_ADDR_*) count too.",
                ),
                Field(
                    "xoff",
                    (4, 1),
                    "rw",
                    doc="1: ask the peer to pause regardless of the RX FIFO (with tx_pause); "
                    "writing 0 sends the XON unless the FIFO is still above the low mark.",
                ),
            ),
            "802.3x flow control. Quasi-static: change it while the MAC is idle.",
        ),
        Register(
            "MAC_FC_QUANTA",
            0x18,
            (
                Field(
                    "quanta",
                    (0, 16),
                    "rw",
                    reset=0xFFFF,
                    doc="Pause time sent in each XOFF, in quanta of 512 bit times.",
                ),
                Field(
                    "refresh",
                    (16, 16),
                    "rw",
                    reset=0x7FFF,
                    doc="While the XOFF condition lasts, resend the XOFF every this many "
                    "quanta (keep it below quanta); 0 = never.",
                ),
            ),
            "PAUSE frames sent.",
        ),
        Register(
            "MAC_FC_WATER",
            0x1C,
            (
                Field(
                    "high",
                    (0, 16),
                    "rw",
                    reset=1024,
                    doc="RX FIFO bytes at or above which the MAC sends an XOFF. Leave room "
                    "for about two full frames above it: the one arriving and the one the "
                    "peer starts before the XOFF reaches it.",
                ),
                Field(
                    "low",
                    (16, 16),
                    "rw",
                    reset=512,
                    doc="RX FIFO bytes below which an XOFF in force is revoked by an XON; "
                    "keep it below high.",
                ),
            ),
            "RX FIFO watermarks for sending PAUSE frames (bytes, rounded down to whole "
            "AXI data words).",
        ),
        Register(
            "MAC_FC_STATUS",
            0x20,
            (
                Field(
                    "rx_paused",
                    (0, 1),
                    "ro",
                    doc="A received PAUSE is holding the transmitter (its quanta are running).",
                ),
                Field(
                    "xoff_sent",
                    (1, 1),
                    "ro",
                    doc="The MAC is asking the peer to pause (an XOFF went out, no XON yet).",
                ),
            ),
            "802.3x flow control status.",
        ),
    )


def _ptp_block() -> Block:
    """IEEE 1588 hardware clock (a Linux PHC): :mod:`macdma.hdl.mac.ptp`."""
    registers = (
        Register(
            "PTP_CTRL",
            0x00,
            (
                Field(
                    "rx_timestamp",
                    (0, 1),
                    "rw",
                    doc="1: stamp every received frame with its SFD time (Linux "
                    "HWTSTAMP_FILTER_ALL); good frames' EOP descriptors then carry it.",
                ),
            ),
            "PTP timestamping control.",
        ),
        Register(
            "PTP_CMD",
            0x04,
            (
                Field(
                    "set",
                    (0, 1),
                    "wo-pulse",
                    doc="Write 1: the clock becomes PTP_SET_HI:PTP_SET_LO ns, fraction 0 "
                    "(settime64).",
                ),
                Field(
                    "step",
                    (1, 1),
                    "wo-pulse",
                    doc="Write 1: add PTP_STEP (signed ns) to the clock in one cycle "
                    "(adjtime). Set wins if both are written at once.",
                ),
            ),
            "PTP clock commands.",
        ),
        _whole(
            "PTP_TIME_LO",
            0x08,
            "ro",
            "The clock's ns, bits 31:0. Reading it copies bits 63:32 of the same instant "
            "into PTP_TIME_HI: read TIME_LO first, then TIME_HI (gettime64).",
        ),
        _whole(
            "PTP_TIME_HI",
            0x0C,
            "ro",
            "The clock's ns, bits 63:32, as of the last PTP_TIME_LO read.",
        ),
        _whole("PTP_SET_LO", 0x10, "rw", "Time loaded by PTP_CMD.set, ns bits 31:0."),
        _whole("PTP_SET_HI", 0x14, "rw", "Time loaded by PTP_CMD.set, ns bits 63:32."),
        _whole(
            "PTP_STEP",
            0x18,
            "rw",
            "Signed ns (two's complement) added by PTP_CMD.step; larger steps: read, add, set.",
        ),
        _whole(
            "PTP_INCREMENT",
            0x1C,
            "rw",
            "ns added per system clock, unsigned fixed point with 24 fraction bits "
            "(8.24; adjfine: PTP_NOMINAL * (1 + ppb / 1e9)). 0, the reset value, means "
            "PTP_NOMINAL.",
        ),
        _whole(
            "PTP_NOMINAL",
            0x20,
            "ro",
            "The build's nominal increment: the system clock period in ns as 8.24 "
            "fixed point (SocParams.sys_clk_hz), supplied by the hardware.",
        ),
        _whole(
            "PTP_RX_UNSTAMPED",
            0x24,
            "ro",
            "Good frames delivered without a timestamp while PTP_CTRL.rx_timestamp was 1 "
            f"(their SFD time could not be paired with them). {_COUNTER_DOC}",
        ),
        _whole(
            "PTP_TX_UNSTAMPED",
            0x28,
            "ro",
            "TX frames that asked for a timestamp (ts_request) and were written back "
            f"without one (a channel reset while waiting). {_COUNTER_DOC}",
        ),
    )
    return Block("PTP", 0x500, registers, "IEEE 1588 hardware clock and timestamping.")


def _build_register_map() -> RegisterMap:
    tx = _dma_channel_block("TX", 0x100, "TX")
    rx = _dma_channel_block("RX", 0x180, "RX")
    irq = Block(
        "IRQ",
        0x200,
        (
            Register(
                "IRQ_STATUS",
                0x00,
                _irq_cause_fields("w1c", ""),
                "Interrupt causes; sticky, write 1 to clear. The irq output is "
                "IRQ_STATUS & IRQ_ENABLE, so re-enabling with a cause pending fires at once.",
            ),
            Register(
                "IRQ_ENABLE",
                0x04,
                _irq_cause_fields("rw", "Enable: "),
                "Interrupt enables, one per IRQ_STATUS cause.",
            ),
            Register(
                "IRQ_MODE",
                0x08,
                (
                    Field("tx_mode", (0, 2), "rw", doc="When tx_done is set.", enum=IRQ_MODE),
                    Field("rx_mode", (8, 2), "rw", doc="When rx_done is set.", enum=IRQ_MODE),
                ),
                "Completion interrupt mode per channel.",
            ),
            _coalesce("TX_COALESCE", 0x0C, "TX"),
            _coalesce("RX_COALESCE", 0x10, "RX"),
            _whole(
                "SYS_CLK_MHZ",
                0x14,
                "rw",
                "System clock frequency in MHz, for the µs timers.",
                width=10,
                reset=100,
                valid=range(1, 1001),
            ),
            _whole("IRQ_COUNT", 0x18, "ro", f"Rising edges of the irq output. {_COUNTER_DOC}"),
            Register(
                "MIN_INTERVAL",
                0x1C,
                (
                    Field(
                        "us",
                        (0, 16),
                        "rw",
                        # 10 ms: the longest interval e1000's InterruptThrottleRate
                        # accepts (100 interrupts/s).
                        valid=range(0, 10001),
                        doc="After the irq output rises it cannot rise again for this many "
                        "µs; causes arriving meanwhile stay pending in IRQ_STATUS and raise "
                        "irq when the interval ends (125 = at most 8,000 interrupts/s). "
                        "0 = no limit; writing 0 ends a running interval.",
                    ),
                ),
                "Interrupt rate limit: the minimum interval between rising edges of irq "
                "(an interrupt throttle rate).",
            ),
        ),
        "Interrupt status, enables and moderation.",
    )
    mac = Block(
        "MAC",
        0x300,
        (
            Register(
                "MAC_CTRL",
                0x00,
                (
                    Field("tx_enable", (0, 1), "rw", doc="1: the MAC transmits frames."),
                    Field("rx_enable", (1, 1), "rw", doc="1: the MAC receives frames."),
                    Field(
                        "mii_select",
                        (2, 1),
                        "rw",
                        doc="1: 4-bit MII nibble mode (10/100 Mb/s); 0: 8-bit GMII.",
                    ),
                ),
                "MAC control.",
            ),
            _whole(
                "MAC_IFG",
                0x04,
                "rw",
                "Inter-frame gap in byte times.",
                width=8,
                reset=12,
                valid=range(1, 256),
            ),
            _whole(
                "MAC_MAX_LEN",
                0x08,
                "rw",
                "Maximum frame length in bytes including FCS; VLAN-tagged frames may be 4 "
                "bytes longer. Longer RX frames count as oversize.",
                width=16,
                reset=1518,
                valid=range(64, 16384),
            ),
            *_flow_control_registers(),
        ),
        "Ethernet MAC configuration.",
    )
    mdio = Block(
        "MDIO",
        0x380,
        (
            Register(
                "MDIO_CTRL",
                0x00,
                (
                    Field(
                        "clk_div",
                        (0, 8),
                        "rw",
                        reset=32,
                        valid=range(2, 256),
                        doc="Half an MDC period in system clocks: MDC = sys_clk / (2 * "
                        "clk_div). Keep MDC at or below 2.5 MHz (802.3 22.2.2.11): clk_div >= "
                        "sys_clk_MHz / 5; the reset value 32 is safe up to a 160 MHz system "
                        "clock. Read data is sampled 3 system clocks before MDC rises, so the "
                        "PHY's MDC-to-MDIO delay (at most 300 ns) must stay under 2 * clk_div - "
                        "3 system clocks: true at 2.5 MHz MDC from a 30 MHz system clock up. "
                        "Sampled when a frame starts.",
                    ),
                ),
                "MDIO (PHY management) control.",
            ),
            Register(
                "MDIO_CMD",
                0x04,
                (
                    Field("data", (0, 16), "rw", doc="Write frames: the 16 data bits."),
                    Field("reg", (16, 5), "rw", doc="PHY register address."),
                    Field("phy", (21, 5), "rw", doc="PHY address."),
                    Field("write", (26, 1), "rw", doc="1: a write frame; 0: a read frame."),
                ),
                "A clause 22 management frame: every write to this register starts one "
                "(write the whole word). A write while MDIO_STATUS.busy starts nothing, sets "
                "MDIO_STATUS.cmd_ignored and only updates the fields read back here.",
                write_strobe=True,
            ),
            Register(
                "MDIO_STATUS",
                0x08,
                (
                    Field(
                        "read_data",
                        (0, 16),
                        "ro",
                        doc="The data of the last read frame; valid once busy is 0.",
                    ),
                    Field(
                        "busy",
                        (16, 1),
                        "ro",
                        doc="A frame is being clocked out; 1 from the cycle after the "
                        "MDIO_CMD write.",
                    ),
                    Field(
                        "cmd_ignored",
                        (17, 1),
                        "w1c",
                        doc="Sticky: an MDIO_CMD write arrived while busy and started no "
                        "frame; write 1 to clear.",
                    ),
                ),
                "MDIO (PHY management) status.",
            ),
        ),
        "MDIO master for PHY management (IEEE 802.3 clause 22): MDC and MDIO pins of the SoC.",
    )
    counters = {**TX_COUNTERS, **RX_COUNTERS, **FLOW_CONTROL_COUNTERS, **CHECKSUM_COUNTERS}
    stats_names = [(name.upper(), doc) for name, doc in counters.items()]
    stats = Block(
        "STATS",
        0x400,
        tuple(
            _whole(name, 4 * index, "ro", f"{doc} {_COUNTER_DOC}")
            for index, (name, doc) in enumerate(stats_names)
        ),
        "MAC statistics.",
    )
    ptp = _ptp_block()
    # CFG_ERROR is generated from the validated fields of every other block.
    identity = Block(
        "ID",
        0x000,
        (
            _whole("ID", 0x000, "ro", 'Identifier "MDMA".', reset=0x4D444D41, constant=True),
            Register(
                "VERSION",
                0x004,
                (
                    Field("minor", (0, 8), "ro", reset=1, constant=True, doc="Minor version."),
                    Field("major", (8, 8), "ro", reset=0, constant=True, doc="Major version."),
                ),
                "Register map version.",
            ),
            Register(
                "FEATURES",
                0x008,
                (
                    Field("data_bytes", (0, 4), "ro", doc="AXI data bus width in bytes (4 or 8)."),
                    Field("tx_fifo_log2", (8, 4), "ro", doc="log2 of the TX FIFO depth in bytes."),
                    Field("rx_fifo_log2", (16, 4), "ro", doc="log2 of the RX FIFO depth in bytes."),
                    Field(
                        "max_prefetch", (24, 4), "ro", doc="Largest PREFETCH the hardware honours."
                    ),
                    Field(
                        "flow_control",
                        (28, 1),
                        "ro",
                        doc="1: 802.3x flow control is built in (the MAC_FC_* registers act).",
                    ),
                    Field(
                        "rx_checksum",
                        (29, 1),
                        "ro",
                        doc="1: RX EOP descriptors carry rx_csum, the frame's ones'-complement "
                        "sum from byte 14 (CHECKSUM_COMPLETE).",
                    ),
                    Field(
                        "tx_checksum",
                        (30, 1),
                        "ro",
                        doc="1: TX checksum insertion is built in: a SOP descriptor's csum_insert "
                        "and ip_csum_insert act (CHECKSUM_PARTIAL).",
                    ),
                    Field(
                        "ptp",
                        (31, 1),
                        "ro",
                        doc="1: the PTP clock and timestamps are built in (the PTP_* "
                        "registers act, descriptors carry timestamps).",
                    ),
                ),
                "Build parameters, supplied by the hardware.",
            ),
            cfg_error_register(
                "CFG_ERROR",
                0x00C,
                (tx, rx, irq, mac, mdio, stats, ptp),
                "Sticky record of rejected writes, one bit per validated field in map order; "
                "write 1 to clear. A rejected write leaves the field unchanged, still answers "
                "OKAY, and sets IRQ_STATUS.cfg_error.",
            ),
            _whole("SCRATCH", 0x010, "rw", "Free for software; no effect on the hardware."),
        ),
        "Identification, build features and configuration errors.",
    )
    return RegisterMap(
        (identity, tx, rx, irq, mac, mdio, stats, ptp),
        window_bytes=4096,
        cfg_error=("ID", "CFG_ERROR"),
        cfg_error_irq=("IRQ", "IRQ_STATUS", "cfg_error"),
    )


REGISTER_MAP: RegisterMap = _build_register_map()
