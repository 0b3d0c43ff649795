"""``macdma_soc``: the MAC, the scatter-gather DMA and the register bank as one device.

A frame's path through the SoC, in the order the blocks appear below:

TX: driver rings the TX doorbell (CSR bank) -> ``TxDmaChannel`` fetches descriptors and
reads fragments over AXI4 -> ``TxFrameFifo`` (store-and-forward, sys -> tx clock) ->
``EthMac`` transmitter -> GMII/MII.

RX: GMII/MII -> ``EthMac`` receiver -> ``RxFrameFifo`` (rx -> sys clock) ->
``RxDmaChannel`` writes buffers and write-backs over AXI4.

PHY management: the MDIO_* registers drive ``MdioController`` (clause 22) on
``mdc``/``mdio_*``.

The CSR bank has one sub-interface per register block (``bank.tx``, ``bank.irq``, ...;
:mod:`macdma.hdl.bus.csr_bank`): a block whose hardware has a ``regs`` port is connected
with ``wiring.connect`` (TX and RX DMA channels, IRQ, MDIO, MAC), the others field by field
by attribute.

Both channels share the one AXI4 master port through round-robin arbiters (ID bit 1:
0 = TX channel, 1 = RX channel). ``irq`` is the IRQ controller's level output.
"""

from dataclasses import dataclass

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer, PulseSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out, connect, flipped
from amaranth.utils import exact_log2

from .bus.axi4 import Axi4Signature, connect_read_write
from .bus.axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from .bus.axi_lite import AxiLiteSignature
from .bus.csr_bank import CsrBank
from .counters import FLOW_CONTROL_COUNTERS
from .dma.irq import IrqController
from .dma.rx_channel import RxDmaChannel
from .dma.rx_fifo import RxFrameFifo
from .dma.tx_channel import TxDmaChannel
from .dma.tx_fifo import TxFrameFifo
from .flatten import connect_flat, flat_clock_domains, flat_members
from .mac.control import MacControl
from .mac.gmii import GmiiRxSignature, GmiiTxSignature
from .mac.mac import EthMac
from .mac.mdio import MDIO_PIN_NAMES, MdioController, MdioPinsSignature
from .mac.ptp import PtpClock, RxTimestamper, TxTimestamper, nominal_increment
from .mac.stats import RxStatistics, TxStatistics
from .regmap import REGISTER_MAP

CSR_ADDR_WIDTH = 12
ADDR_WIDTH = 32
# Long enough for 4 cycles of a 2.5 MHz MII clock at a 100 MHz system clock.
TX_FIFO_RESET_CYCLES = 200
#: The most descriptors a build's channels may hold: what ID_FEATURES.max_prefetch can
#: report. PREFETCH itself accepts 1..16 (a driver may ask for more than a build holds;
#: the channel clamps it to the build's max_prefetch).
MAX_BUILD_PREFETCH = (1 << REGISTER_MAP.field("ID_FEATURES", "max_prefetch").width) - 1


@dataclass(frozen=True)
class SocParams:
    """Build-time parameters; everything a regression sweeps is a register instead."""

    data_width: int = 32  # AXI4 master data width: 32 or 64
    # Frames up to this size are stored whole before sending (larger ones go cut-through,
    # docs/soc.md); the default holds one jumbo frame (MAX_JUMBO_FRAME_BYTES).
    tx_fifo_bytes: int = 16384
    rx_fifo_bytes: int = 4096
    max_prefetch: int = 8  # most descriptors fetched in one burst (FEATURES.max_prefetch)
    flow_control: bool = True  # 802.3x PAUSE in the MAC (FEATURES.flow_control, MAC_FC_*)
    rx_checksum: bool = True  # CHECKSUM_COMPLETE sums in RX EOP descriptors (FEATURES)
    tx_checksum: bool = True  # CHECKSUM_PARTIAL insertion in the TX FIFO (FEATURES)
    ptp: bool = True  # IEEE 1588 clock and descriptor timestamps (FEATURES.ptp, PTP_*)
    # The system clock the build is for: PTP_NOMINAL, the PTP clock's default increment.
    sys_clk_hz: float = 100e6

    def __post_init__(self):
        if self.data_width not in (32, 64):
            raise ValueError(f"data_width must be 32 or 64, not {self.data_width!r}")
        for name in ("tx_fifo_bytes", "rx_fifo_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 2048 or value & (value - 1):
                raise ValueError(f"{name} must be a power of two >= 2048, not {value!r}")
        if (
            not isinstance(self.max_prefetch, int)
            or not 1 <= self.max_prefetch <= MAX_BUILD_PREFETCH
        ):
            raise ValueError(
                f"max_prefetch must be 1..{MAX_BUILD_PREFETCH} (what ID_FEATURES.max_prefetch "
                f"can report), not {self.max_prefetch!r}"
            )
        nominal_increment(self.sys_clk_hz)  # raises ValueError naming a bad frequency
        for name in ("flow_control", "rx_checksum", "tx_checksum", "ptp"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}")


class MacDmaSoc(wiring.Component):
    """The SoC core, in three clock domains: ``sync`` (system: CSR bank, DMA, AXI), and
    the PHY's ``tx`` and ``rx``. A top defines the domains (see :class:`SocTop`).

    Members
    -------
    csr : In(AxiLiteSignature(12, 32))
        The register bank (docs/registers.md).
    axi : Out(Axi4Signature(32, data_width, id_width=2))
        Host memory: descriptor rings and buffers.
    irq : Out(1)
        Level interrupt: IRQ_STATUS & IRQ_ENABLE.
    gmii_tx, gmii_rx
        PHY pins, ``tx`` and ``rx`` domains.
    tx_clk_enable, rx_clk_enable : In(1)
        Which PHY clocks carry a symbol (10/100 on a fixed clock); MII nibble mode is
        MAC_CTRL.mii_select.
    mdio : Out(MdioPinsSignature())
        PHY management (MDIO_* registers), ``sync`` domain: ``mdc``, and the MDIO line for
        the tristate buffer the board adds (``oe`` high: drive ``o``). ``i`` is
        synchronised inside, so it may come straight from the pin.
    """

    def __init__(self, params: SocParams = SocParams()):
        self.params = params
        super().__init__(
            {
                "csr": In(AxiLiteSignature(CSR_ADDR_WIDTH, 32)),
                "axi": Out(Axi4Signature(ADDR_WIDTH, params.data_width, id_width=2)),
                "irq": Out(1),
                "gmii_tx": Out(GmiiTxSignature()),
                "gmii_rx": Out(GmiiRxSignature()),
                "tx_clk_enable": In(1),
                "rx_clk_enable": In(1),
                "mdio": Out(MdioPinsSignature()),
            }
        )

    def elaborate(self, platform):
        m = Module()
        params = self.params
        width = params.data_width

        m.submodules.csr_bank = bank = CsrBank(REGISTER_MAP)
        connect(m, flipped(self.csr), bank.bus)
        self._features(m, bank)

        m.submodules.irq = irq = IrqController(REGISTER_MAP)
        connect(m, bank.irq, irq.regs)
        m.d.comb += self.irq.eq(irq.irq)

        m.submodules.tx_dma = tx_dma = TxDmaChannel(width, ADDR_WIDTH, params.max_prefetch)
        m.submodules.rx_dma = rx_dma = RxDmaChannel(width, ADDR_WIDTH, params.max_prefetch)
        # TX is held while its FIFO resets (MacDmaSoc._tx_fifo); TX_DROPS counts the MAC's
        # underruns whose write-back landed (MacDmaSoc._mac_statistics).
        connect(m, bank.tx, tx_dma.regs)
        connect(m, bank.rx, rx_dma.regs)
        m.d.comb += [
            tx_dma.sys_clk_mhz.eq(bank.irq.sys_clk_mhz),
            rx_dma.sys_clk_mhz.eq(bank.irq.sys_clk_mhz),
        ]
        connect(m, tx_dma.events, irq.tx)
        connect(m, rx_dma.events, irq.rx)

        m.submodules.read_arbiter = read_arbiter = Axi4ReadArbiter(
            2, ADDR_WIDTH, width, id_width_in=1
        )
        m.submodules.write_arbiter = write_arbiter = Axi4WriteArbiter(
            2, ADDR_WIDTH, width, id_width_in=1
        )
        connect(m, tx_dma.axi_read, read_arbiter.i0)
        connect(m, rx_dma.axi_read, read_arbiter.i1)
        connect(m, tx_dma.axi_write, write_arbiter.i0)
        connect(m, rx_dma.axi_write, write_arbiter.i1)
        connect_read_write(m, bus=self.axi, read=read_arbiter.o, write=write_arbiter.o)

        m.submodules.tx_fifo = tx_fifo = self._tx_fifo(m, bank, tx_dma)
        m.submodules.rx_fifo = rx_fifo = RxFrameFifo(
            width, params.rx_fifo_bytes, checksum=params.rx_checksum, timestamps=params.ptp
        )
        # PAUSE frames stay out of the RX FIFO: the DMA would hand a flagged one to the
        # driver as a bad frame (the MAC's statistics count them as PAUSE frames).
        m.submodules.mac = mac = EthMac(
            flow_control=params.flow_control,
            remove_control_frames=params.flow_control,
            ptp=params.ptp,
        )
        connect(m, tx_dma.o, tx_fifo.i)
        connect(m, tx_fifo.o, mac.tx)
        self._tx_reset_discards(m, tx_fifo, tx_dma)
        # A frame's cause, checksum and timestamp ride in its last beat's payload (meta);
        # with PTP the timestamper stands between the MAC and the RX FIFO (_ptp).
        if not params.ptp:
            connect(m, mac.rx, rx_fifo.i)
        connect(m, rx_fifo.o, rx_dma.i)
        m.d.comb += rx_dma.fifo_overflows.eq(rx_fifo.overflows)
        connect(m, mac.gmii_tx, flipped(self.gmii_tx))
        connect(m, mac.gmii_rx, flipped(self.gmii_rx))
        m.d.comb += [
            mac.tx_clk_enable.eq(self.tx_clk_enable),
            mac.rx_clk_enable.eq(self.rx_clk_enable),
        ]
        m.submodules.mac_control = mac_control = MacControl(
            flow_control=params.flow_control, fill_width=len(rx_fifo.fill_bytes)
        )
        connect(m, bank.mac, mac_control.regs)
        m.d.comb += [
            mac.config.eq(mac_control.config),
            mac.tx_mii_select.eq(mac_control.tx_mii_select),
            mac.rx_mii_select.eq(mac_control.rx_mii_select),
        ]
        self._mac_statistics(m, bank, mac, tx_dma)
        if params.flow_control:
            m.d.comb += [
                mac.rx_lfc_en.eq(mac_control.rx_lfc_en),
                mac.mcf_rx_config.eq(mac_control.mcf_rx_config),
                mac.rx_lfc_config.eq(mac_control.rx_lfc_config),
                mac.tx_lfc_pause_en.eq(mac_control.tx_lfc_pause_en),
                mac.tx_lfc_config.eq(mac_control.tx_lfc_config),
                mac.tx_lfc_req.eq(mac_control.tx_lfc_req),
                mac_control.rx_fifo_fill_bytes.eq(rx_fifo.fill_bytes),
                mac_control.rx_paused.eq(mac.rx_lfc_req),
                mac_control.xoff_sent.eq(mac.tx_flow_stats.lfc_paused),
                rx_dma.wait_for_buffers.eq(mac_control.wait_for_buffers),
            ]
            self._flow_control_statistics(m, bank.stats, mac)
        else:
            for name in FLOW_CONTROL_COUNTERS:
                m.d.comb += _statistic(bank.stats, name).eq(0)
        m.submodules.mdio = mdio = MdioController()
        connect(m, bank.mdio, mdio.regs)
        connect(m, flipped(self.mdio), mdio.mdio)
        if params.ptp:
            self._ptp(m, bank, mac, rx_fifo, tx_dma)
        return m

    def _tx_fifo(self, m, bank, tx_dma):
        """The TX FIFO, emptied by a TX channel reset too: a half-read frame left in it
        would otherwise be glued to the next frame and sent with a good FCS. Its reset is
        held long enough for the slowest PHY clock to see it (the FIFO then ends a frame
        the MAC is sending with an error byte, so it leaves the wire with tx_er), and the
        channel waits until the FIFO is back."""
        resetting = Signal(range(TX_FIFO_RESET_CYCLES + 1))
        with m.If(bank.tx.ctrl.reset):
            m.d.sync += resetting.eq(TX_FIFO_RESET_CYCLES)
        with m.Elif(resetting != 0):
            m.d.sync += resetting.eq(resetting - 1)
        domain = ClockDomain("tx_fifo_sys", local=True)
        m.domains += domain
        m.d.comb += [
            domain.clk.eq(ClockSignal("sync")),
            domain.rst.eq(ResetSignal("sync") | (resetting != 0)),
            tx_dma.hold.eq(resetting != 0),
        ]
        fifo = TxFrameFifo(
            self.params.data_width,
            self.params.tx_fifo_bytes,
            checksum=self.params.tx_checksum,
            timestamps=self.params.ptp,
        )
        skipped = Signal(len(bank.stats.tx_csum_skipped), name="tx_csum_skipped")
        with m.If(fifo.csum_skipped):
            m.d.sync += skipped.eq(skipped + 1)
        m.d.comb += bank.stats.tx_csum_skipped.eq(skipped)
        return DomainRenamer({"sync": "tx_fifo_sys"})(fifo)

    @staticmethod
    def _tx_reset_discards(m, tx_fifo, tx_dma):
        """TX_RESET_DISCARDS: the channel counts frames written back and flushed from the
        TX FIFO before the MAC started them; it learns of each start (the MAC taking a
        frame's first byte, in the ``tx`` domain) through a pulse synchronizer."""
        mac_in_frame = Signal()
        started = Signal()
        with m.If(tx_fifo.o.valid & tx_fifo.o.ready):
            m.d.tx += mac_in_frame.eq(~tx_fifo.o.p.last)
            m.d.comb += started.eq(~mac_in_frame)
        m.submodules.tx_frame_started_cdc = pulse = PulseSynchronizer("tx", "sync")
        m.d.comb += [
            pulse.i.eq(started),
            tx_dma.frame_started.eq(pulse.o),
            tx_dma.fifo_flushing.eq(ResetSignal("tx_fifo_sys")),
        ]

    def _features(self, m, bank):
        params = self.params
        features = bank.id.features
        m.d.comb += [
            features.data_bytes.eq(params.data_width // 8),
            features.tx_fifo_log2.eq(exact_log2(params.tx_fifo_bytes)),
            features.rx_fifo_log2.eq(exact_log2(params.rx_fifo_bytes)),
            features.max_prefetch.eq(params.max_prefetch),
            features.flow_control.eq(params.flow_control),
            features.rx_checksum.eq(params.rx_checksum),
            features.tx_checksum.eq(params.tx_checksum),
            features.ptp.eq(params.ptp),
        ]

    @staticmethod
    def _mac_statistics(m, bank, mac, tx_dma):
        # One status record per frame crosses to the system clock, and the counters count
        # there, where the register bank reads them. A frame takes at least 64 byte
        # times on the wire, so a few entries of FIFO can never fill.
        tx_stats = m.submodules.tx_stats = TxStatistics()
        rx_stats = m.submodules.rx_stats = RxStatistics()
        for domain, status, stats in (
            ("tx", mac.tx_status, tx_stats),
            ("rx", mac.rx_status, rx_stats),
        ):
            crossing = m.submodules[f"{domain}_status_cdc"] = AsyncFIFO(
                width=len(status.payload.as_value()), depth=4, w_domain=domain, r_domain="sync"
            )
            m.d.comb += [
                crossing.w_data.eq(status.payload),
                crossing.w_en.eq(status.valid),
                stats.status.payload.eq(crossing.r_data),
                stats.status.valid.eq(crossing.r_rdy),
                crossing.r_en.eq(1),
            ]
        for name in ("preamble_error", "dropped_disabled"):
            pulse = m.submodules[f"rx_{name}_cdc"] = PulseSynchronizer("rx", "sync")
            m.d.comb += [
                pulse.i.eq(getattr(mac, f"rx_{name}")),
                getattr(rx_stats, name).eq(pulse.o),
            ]
        for counters in (tx_stats.counters, rx_stats.counters):
            for name in counters.signature.members:
                m.d.comb += _statistic(bank.stats, name).eq(getattr(counters, name))
        # TX_DROPS: the MAC's underruns whose write-back landed; the TX channel decides
        # (a cut frame still owned by the DMA is the driver's to count).
        m.d.comb += tx_dma.frame_cut.eq(tx_stats.status.valid & tx_stats.status.p.underrun)

    @staticmethod
    def _flow_control_statistics(m, stats, mac):
        """The STATS_* counters of 802.3x flow control (its settings and PAUSE logic:
        MacControl). Strobes (one per frame at most) cross as pulses and are counted
        here."""
        # Built as a submodule, so the synthesis report can count what flow control costs.
        soc, m = m, Module()
        soc.submodules.flow_control = m
        strobes = {
            "tx_pause_frames": ("tx", mac.tx_flow_stats.lfc_pkt),
            "tx_xoff": ("tx", mac.tx_flow_stats.lfc_xoff),
            "tx_xon": ("tx", mac.tx_flow_stats.lfc_xon),
            "tx_mac_control": ("tx", mac.tx_flow_stats.mcf),
            "rx_pause_frames": ("rx", mac.rx_flow_stats.lfc_pkt),
            "rx_xoff": ("rx", mac.rx_flow_stats.lfc_xoff),
            "rx_xon": ("rx", mac.rx_flow_stats.lfc_xon),
            "rx_mac_control": ("rx", mac.rx_flow_stats.mcf),
        }
        assert strobes.keys() == FLOW_CONTROL_COUNTERS.keys()
        for name, (domain, strobe) in strobes.items():
            pulse = m.submodules[f"{name}_cdc"] = PulseSynchronizer(domain, "sync")
            port = _statistic(stats, name)
            counter = Signal(len(port), name=f"{name}_count")
            m.d.comb += [pulse.i.eq(strobe), port.eq(counter)]
            with m.If(pulse.o):
                m.d.sync += counter.eq(counter + 1)

    def _ptp(self, m, bank, mac, rx_fifo, tx_dma):
        """IEEE 1588: the PTP clock behind the PTP_* registers, and the SFD times of
        received frames (every good frame while PTP_CTRL.rx_timestamp: the timestamper
        stands between the MAC's receive stream and the RX FIFO) and of transmitted
        frames that asked (ts_request), written into their EOP descriptors."""
        # Built as a submodule, so the synthesis report can count what PTP costs.
        soc, m = m, Module()
        soc.submodules.ptp = m
        m.submodules.clock = clock = PtpClock(nominal_increment(self.params.sys_clk_hz))
        regs = bank.ptp
        m.d.comb += [
            clock.increment.eq(regs.increment),
            clock.set.eq(regs.cmd.set),
            clock.set_ns.eq(Cat(regs.set_lo, regs.set_hi)),
            clock.step.eq(regs.cmd.step),
            clock.step_ns.eq(regs.step),
            regs.nominal.eq(nominal_increment(self.params.sys_clk_hz)),
            regs.time_lo.eq(clock.time_ns[: len(regs.time_lo)]),
        ]
        # The bank samples PTP_TIME_LO in the cycle it accepts the read address: the high
        # word of that same cycle is kept for the PTP_TIME_HI read that follows.
        time_lo_address = REGISTER_MAP.address("PTP_TIME_LO")
        time_hi = Signal(len(regs.time_hi), name="time_hi")
        csr = self.csr
        with m.If(csr.arvalid & csr.arready & (csr.araddr == time_lo_address)):
            m.d.sync += time_hi.eq(clock.time_ns[len(regs.time_lo) :])
        m.d.comb += regs.time_hi.eq(time_hi)

        # RX: the SFD time of every frame, written into its last beat on the way into the
        # RX FIFO, and carried through it with the frame.
        m.submodules.rx_stamper = rx_stamper = RxTimestamper()
        m.submodules.rx_timestamp_sync = FFSynchronizer(
            regs.ctrl.rx_timestamp, rx_stamper.enable, o_domain="rx"
        )
        connect(m, mac.rx, rx_stamper.i)
        connect(m, rx_stamper.o, rx_fifo.i)
        m.d.comb += [
            rx_stamper.time_ns.eq(clock.time_ns),
            rx_stamper.sfd.eq(mac.rx_sfd),
        ]
        # Good frames leaving the RX FIFO without a time while timestamping is on.
        unstamped = Signal(len(regs.rx_unstamped), name="rx_unstamped")
        last = rx_fifo.o.valid & rx_fifo.o.ready & rx_fifo.o.p.last
        good = ~rx_fifo.o.p.error & (rx_fifo.o.p.count != 0)
        with m.If(last & good & ~rx_fifo.o.p.meta.ts_valid & regs.ctrl.rx_timestamp):
            m.d.sync += unstamped.eq(unstamped + 1)
        m.d.comb += regs.rx_unstamped.eq(unstamped)

        # TX: the request travels with the frame (in its beats' payload) through the TX
        # FIFO into the MAC; the SFD time comes back to the channel, which holds the EOP
        # write-back for it.
        m.submodules.tx_stamper = tx_stamper = TxTimestamper()
        m.d.comb += [
            tx_stamper.sfd.eq(mac.tx_ts_sfd),
            tx_stamper.sfd_id.eq(mac.tx_ts_id),
            tx_stamper.time_ns.eq(clock.time_ns),
            tx_dma.ts_valid.eq(tx_stamper.ts_valid),
            tx_dma.ts_id.eq(tx_stamper.ts_id),
            tx_dma.ts_ns.eq(tx_stamper.ts_ns),
        ]
        tx_unstamped = Signal(len(regs.tx_unstamped), name="tx_unstamped")
        with m.If(tx_dma.ts_discarded):
            m.d.sync += tx_unstamped.eq(tx_unstamped + 1)
        m.d.comb += regs.tx_unstamped.eq(tx_unstamped)


def _statistic(stats, name):
    """The STATS block's port for the counter ``name`` of the MAC's counter tables
    (:mod:`macdma.hdl.counters`): the STATS block is generated from those same tables,
    one register per counter, so each counter's name is its register's member."""
    return getattr(stats, name)


class SocTop(wiring.Component):
    """``macdma_soc`` with flat Verilog ports: ``clk``/``rst`` (system clock, reset active
    high and synchronous), ``s_axil_*`` (AXI4-Lite slave), ``m_axi_*`` (AXI4 master, the
    names cocotbext-axi's ``AxiBus.from_prefix(dut, "m_axi")`` expects), ``irq``, and the
    MAC's PHY side as in ``macdma_eth_mac``: ``tx_clk``, ``tx_rst``, ``rx_clk``,
    ``rx_rst``, ``gmii_*``, ``tx_clk_enable``, ``rx_clk_enable``, and PHY management:
    ``mdc``, ``mdio_o``, ``mdio_oe``, ``mdio_i``."""

    def __init__(self, **params):
        self.core = MacDmaSoc(SocParams(**params))
        core_members = self.core.signature.members
        members = {name: In(1) for name in ("clk", "rst", "tx_clk", "tx_rst", "rx_clk", "rx_rst")}
        members.update(flat_members("s_axil", core_members["csr"]))
        members.update(flat_members("m_axi", core_members["axi"]))
        members["irq"] = Out(1)
        members.update(flat_members("gmii", core_members["gmii_tx"]))
        members.update(flat_members("gmii", core_members["gmii_rx"]))
        members["tx_clk_enable"] = In(1)
        members["rx_clk_enable"] = In(1)
        members.update(flat_members("mdio", core_members["mdio"], MDIO_PIN_NAMES))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        flat_clock_domains(m, self)
        m.submodules.soc = core = self.core
        members = core.signature.members
        connect_flat(m, self, "s_axil", core.csr, members["csr"])
        connect_flat(m, self, "m_axi", core.axi, members["axi"])
        connect_flat(m, self, "gmii", core.gmii_tx, members["gmii_tx"])
        connect_flat(m, self, "gmii", core.gmii_rx, members["gmii_rx"])
        m.d.comb += [
            self.irq.eq(core.irq),
            core.tx_clk_enable.eq(self.tx_clk_enable),
            core.rx_clk_enable.eq(self.rx_clk_enable),
        ]
        connect_flat(m, self, "mdio", core.mdio, members["mdio"], MDIO_PIN_NAMES)
        return m
