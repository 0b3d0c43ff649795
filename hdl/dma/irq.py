"""Interrupt moderation: when DMA completions become ``*_done`` causes, and the irq line.

Three blocks, all in the sys clock domain:

* :class:`IrqModerator`, one per DMA channel (TX and RX): turns the channel's one-cycle
  completion strobes (:class:`IrqEventSignature`) into ``done_set`` / ``error_set`` strobes
  for the CSR bank's sticky (w1c) ``IRQ_STATUS`` bits, according to ``IRQ_MODE``.
* :class:`IrqController`: owns both moderators and the level ``irq`` output
  (``IRQ_STATUS & IRQ_ENABLE``, registered), limits how often that line may rise
  (``IRQ_MIN_INTERVAL``) and counts its rising edges (``IRQ_COUNT``). Its ``regs`` port
  is the IRQ block of the :class:`~macdma.hdl.bus.csr_bank.CsrBank`
  (``wiring.connect(m, bank.irq, controller.regs)``).
* Both time with :class:`~macdma.hdl.dma.us_timer.MicrosecondTimer`, the µs timer the
  DMA channels' poll timers use too.

Timing (cycle N = the cycle in which an input strobe is high)
-----------------------------------------------------------
* ``done_set`` / ``error_set`` are registered: high in cycle N+1 for an event in cycle N.
  The CSR bank then shows the status bit from N+2, and ``irq`` rises in N+3 if enabled.
* The coalescing timer, started by a frame in cycle N, expires in cycle
  N + timer_us * sys_clk_mhz exactly (it restarts its µs prescaler when it starts), so
  ``done_set`` is high one cycle later, like for every other event. With
  ``timer_restart`` = 0 the first pending frame starts it (the latency of that frame is
  bounded); with ``timer_restart`` = 1 every frame restarts it, so it expires
  timer_us * sys_clk_mhz cycles after the *last* frame: an idle timer, the Xilinx AXI DMA's
  IRQDelay (PG021), which the Linux axienet driver programs as "µs after the last
  completion". A frame completing in the cycle the timer expires is signalled with it.
* Rate limit: when ``irq`` rises in cycle R and ``min_interval_us`` is non-zero, it cannot
  rise again before cycle R + min_interval_us * sys_clk_mhz; with a cause pending all the
  time it rises exactly in that cycle, so the interval is exact to the cycle. The line may
  stay high and may fall (the driver acknowledges or masks) during the interval; causes
  that arrive meanwhile stay pending in IRQ_STATUS (it is sticky) and raise ``irq`` when
  the interval ends. Writing 0 ends a running interval at once; a running interval keeps
  the length it started with.

Changing the configuration never loses a completion
--------------------------------------------------
Frames completed in COALESCE mode and not yet signalled are *pending*. They are signalled
as soon as the count reaches ``coalesce_frames`` (so lowering it to or below the pending
count fires at once), when the timer expires, or, at once, when the mode becomes
PER_DESC or EOP. In NONE mode they are kept, neither signalled nor dropped, and the timer
pauses; new frames are not counted (the driver polls the ring). Setting ``timer_us`` to 0
stops the timer; setting it non-zero while frames are pending starts it then. A running
timer keeps the ``timer_us`` it started with; ``sys_clk_mhz`` is sampled at each µs.
"""

import types

from amaranth import *
from amaranth.lib import data, enum, wiring
from amaranth.lib.wiring import In, Out

from ..bus.csr_bank import block_signature
from ..regmap import IRQ_MODE, REGISTER_MAP
from ..regmodel import RegisterMap
from .us_timer import MicrosecondTimer, check_width

__all__ = [
    "IrqMode",
    "IrqEventSignature",
    "IrqModerator",
    "IrqController",
    "irq_causes_layout",
]


def _irq_mode_members(namespace) -> None:
    namespace["__module__"] = __name__
    namespace["__doc__"] = (
        "When a channel raises ``*_done``: the register map's ``IrqMode`` (IRQ_MODE.tx_mode "
        "and rx_mode), its names, values and width taken from the map."
    )
    for value in IRQ_MODE.values:
        namespace[value.name] = value.value


#: PER_DESC: each descriptor written back with IOC; EOP: each frame; COALESCE: after
#: coalesce_frames frames or timer_us µs, whichever first; NONE: never, the driver polls.
IrqMode = types.new_class(
    IRQ_MODE.name,
    (enum.Enum,),
    {"shape": REGISTER_MAP.field("IRQ_MODE", "tx_mode").width},
    exec_body=_irq_mode_members,
)


class IrqEventSignature(wiring.Signature):
    """Completion events of one DMA channel, from the channel's point of view (all ``Out``,
    one-cycle strobes; several may be high in the same cycle).

    Members:
        desc_done:  a descriptor was written back.
        desc_ioc:   that descriptor's IOC flag (meaningful with ``desc_done``).
        frame_done: the EOP descriptor of a frame was written back (also with ``desc_done``).
        error:      the channel halted with an error.
    """

    def __init__(self):
        super().__init__(
            {
                "desc_done": Out(1),
                "desc_ioc": Out(1),
                "frame_done": Out(1),
                "error": Out(1),
            }
        )


class IrqModerator(wiring.Component):
    """Interrupt moderation for one DMA channel (see the module docstring for timing).

    Parameters:
        frames_width:      width of ``coalesce_frames`` (8: 1..255 frames).
        timer_us_width:    width of ``timer_us`` (16).
        sys_clk_mhz_width: width of ``sys_clk_mhz`` (10: 1..1000 MHz).

    Members:
        events:          ``In(IrqEventSignature())``: the channel's completion strobes.
        mode:            ``In(IrqMode)``.
        coalesce_frames: ``In(frames_width)``: COALESCE raises after this many frames;
                         0 acts as 1.
        timer_us:        ``In(timer_us_width)``: COALESCE raises this many µs after the first
                         pending frame (the last with ``timer_restart``); 0 = no timer.
        timer_restart:   ``In(1)``: every frame restarts the timer (an idle timer).
        sys_clk_mhz:     ``In(sys_clk_mhz_width)``: sys clock in MHz, the µs prescaler;
                         0 acts as 1.
        done_set:        ``Out(1)``: one-cycle strobe for ``IRQ_STATUS.<dir>_done_set``.
        error_set:       ``Out(1)``: one-cycle strobe for ``IRQ_STATUS.<dir>_error_set``;
                         follows ``events.error`` by one cycle in every mode.
        pending_frames:  ``Out(frames_width)``: frames completed in COALESCE mode and not
                         yet signalled (for observation).
        timer_running:   ``Out(1)``: the coalescing timer is counting (for observation).
    """

    def __init__(
        self, *, frames_width: int = 8, timer_us_width: int = 16, sys_clk_mhz_width: int = 10
    ):
        self._frames_width = check_width("frames_width", frames_width)
        self._timer_us_width = check_width("timer_us_width", timer_us_width)
        self._sys_clk_mhz_width = check_width("sys_clk_mhz_width", sys_clk_mhz_width)
        super().__init__(
            {
                "events": In(IrqEventSignature()),
                "mode": In(IrqMode),
                "coalesce_frames": In(frames_width),
                "timer_us": In(timer_us_width),
                "timer_restart": In(1),
                "sys_clk_mhz": In(sys_clk_mhz_width),
                "done_set": Out(1),
                "error_set": Out(1),
                "pending_frames": Out(frames_width),
                "timer_running": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        events = self.events
        pending = self.pending_frames
        m.submodules.timer = timer = MicrosecondTimer(
            us_width=self._timer_us_width, sys_clk_mhz_width=self._sys_clk_mhz_width
        )
        running = timer.running
        m.d.comb += [
            timer.us.eq(self.timer_us),
            timer.sys_clk_mhz.eq(self.sys_clk_mhz),
            self.timer_running.eq(running),
        ]

        # Pending frames including one completing in this cycle; one bit wider so the
        # count cannot wrap even if it reaches the largest coalesce_frames.
        frames_now = Signal(self._frames_width + 1)
        m.d.comb += frames_now.eq(pending + events.frame_done)
        has_frames = frames_now != 0

        m.d.sync += [
            self.done_set.eq(0),
            self.error_set.eq(events.error),
        ]

        def flush(extra_cause):
            """Signal ``extra_cause`` and every pending frame; forget both."""
            m.d.sync += [
                self.done_set.eq(extra_cause | (pending != 0)),
                pending.eq(0),
            ]
            m.d.comb += timer.stop.eq(1)

        with m.Switch(self.mode):
            with m.Case(IrqMode.PER_DESC):
                flush(events.desc_done & events.desc_ioc)
            with m.Case(IrqMode.EOP):
                flush(events.frame_done)
            with m.Case(IrqMode.COALESCE):
                by_count = has_frames & (frames_now >= self.coalesce_frames)
                by_timer = has_frames & timer.expires
                with m.If(by_count | by_timer):
                    m.d.sync += [
                        self.done_set.eq(1),
                        pending.eq(0),
                    ]
                    m.d.comb += timer.stop.eq(1)
                with m.Else():
                    m.d.sync += pending.eq(frames_now)
                    with m.If(self.timer_us == 0):
                        m.d.comb += timer.stop.eq(1)
                    with m.Elif(~running & has_frames):
                        # First pending frame (or the timer was just switched on): start.
                        m.d.comb += timer.start.eq(1)
                    with m.Elif(self.timer_restart & events.frame_done):
                        # Idle timer: each further frame starts the count again.
                        m.d.comb += timer.start.eq(1)
            with m.Case(IrqMode.NONE):
                # Pending frames and the timer hold until the mode changes.
                m.d.comb += timer.hold.eq(1)

        return m


def _irq_causes(regmap: RegisterMap) -> tuple[str, ...]:
    """The IRQ_STATUS cause names, bit 0 first; they must be contiguous 1-bit fields
    from bit 0 so that a cause vector lines up with the register word."""
    try:
        status = regmap.register("IRQ_STATUS")
        enable = regmap.register("IRQ_ENABLE")
    except KeyError as exc:
        raise ValueError(f"The register map has no IRQ_STATUS / IRQ_ENABLE: {exc}") from None
    causes = tuple(f.name for f in sorted(status.fields, key=lambda f: f.lsb))
    for bit, fld in enumerate(sorted(status.fields, key=lambda f: f.lsb)):
        if fld.bits != (bit, 1) or fld.access != "w1c":
            raise ValueError(
                f"IRQ_STATUS field {fld.name} must be a w1c bit at bit {bit}, not "
                f"{fld.access} bits {fld.bits}"
            )
    if tuple(f.name for f in sorted(enable.fields, key=lambda f: f.lsb)) != causes:
        raise ValueError(f"IRQ_ENABLE fields must match the IRQ_STATUS causes {causes}")
    for needed in ("tx_done", "rx_done", "tx_error", "rx_error"):
        if needed not in causes:
            raise ValueError(f"IRQ_STATUS has no {needed!r} cause (causes: {causes})")
    return causes


def irq_causes_layout(regmap: RegisterMap = REGISTER_MAP) -> data.StructLayout:
    """One bit per IRQ_STATUS cause, in register bit order (tx_done, rx_done, ...)."""
    return data.StructLayout({name: 1 for name in _irq_causes(regmap)})


class IrqController(wiring.Component):
    """Both channels' moderators and the level interrupt output, behind the IRQ block.

    Parameters:
        regmap: the register map the CSR bank implements; the cause list and the ``regs``
                port come from its IRQ block (the block of IRQ_STATUS).

    Members:
        tx, rx:   ``In(IrqEventSignature())``: the channels' events.
        regs:     ``In(block_signature(IRQ block))``: the IRQ block of the CSR bank, connected
                  with ``wiring.connect(m, bank.irq, controller.regs)``. Read: IRQ_MODE,
                  IRQ_TX_COALESCE / IRQ_RX_COALESCE, IRQ_SYS_CLK_MHZ, IRQ_MIN_INTERVAL.us
                  (0 = no rate limit) and the IRQ_STATUS / IRQ_ENABLE bits. Driven:
                  ``status.<dir>_done_set`` and ``status.<dir>_error_set`` (one-cycle
                  strobes from the moderators), ``count`` (IRQ_COUNT: rising edges of
                  ``irq``; counts up in the cycle ``irq`` rises, wraps) and 0 on the set
                  port of every other cause (``cfg_error``: the bank sets it itself).
        irq:      ``Out(1)``: level, high the cycle after ``status & enable`` becomes
                  non-zero, unless the rate limit holds it off. Registered so the line never
                  glitches.
        holdoff:  ``Out(1)``: the rate limit interval is running: ``irq`` cannot rise in this
                  cycle (for observation).
    """

    def __init__(self, regmap: RegisterMap = REGISTER_MAP):
        if not isinstance(regmap, RegisterMap):
            raise TypeError(f"regmap must be a RegisterMap, not {regmap!r}")
        self._causes = tuple(name for name, _ in irq_causes_layout(regmap))
        block, _ = regmap.lookup("IRQ_STATUS")
        self._regmap = regmap
        super().__init__(
            {
                "tx": In(IrqEventSignature()),
                "rx": In(IrqEventSignature()),
                "regs": In(block_signature(block, regmap)),
                "irq": Out(1),
                "holdoff": Out(1),
            }
        )

    @property
    def regmap(self) -> RegisterMap:
        return self._regmap

    def cause_bits(self, which: str) -> Value:
        """``regs.status`` or ``regs.enable`` (``which``) as one vector, bit 0 first, like
        the register word."""
        bits = getattr(self.regs, which)
        return Cat(getattr(bits, cause) for cause in self._causes)

    def elaborate(self, platform):
        m = Module()
        regs = self.regs
        channels = (
            ("tx", self.tx, regs.mode.tx_mode, regs.tx_coalesce),
            ("rx", self.rx, regs.mode.rx_mode, regs.rx_coalesce),
        )
        status_sets = {
            "tx": (regs.status.tx_done_set, regs.status.tx_error_set),
            "rx": (regs.status.rx_done_set, regs.status.rx_error_set),
        }
        for direction, events, mode, coalesce in channels:
            moderator = IrqModerator(
                frames_width=len(coalesce.frames),
                timer_us_width=len(coalesce.timer_us),
                sys_clk_mhz_width=len(regs.sys_clk_mhz),
            )
            m.submodules[f"{direction}_moderator"] = moderator
            wiring.connect(m, wiring.flipped(events), moderator.events)
            done_set, error_set = status_sets[direction]
            m.d.comb += [
                moderator.mode.eq(IrqMode(mode)),
                moderator.coalesce_frames.eq(coalesce.frames),
                moderator.timer_us.eq(coalesce.timer_us),
                moderator.timer_restart.eq(coalesce.timer_restart),
                moderator.sys_clk_mhz.eq(regs.sys_clk_mhz),
                done_set.eq(moderator.done_set),
                error_set.eq(moderator.error_set),
            ]

        # Level interrupt = any enabled cause. Status is sticky, so enabling a cause that is
        # already set raises irq at once: a NAPI driver that re-enables after polling cannot
        # miss work that arrived while it was masked.
        asserted = (self.cause_bits("status") & self.cause_bits("enable")).any()
        # Rate limit: each rise starts the interval; while it runs a low line stays low (a
        # high one follows the causes, so acknowledging still lowers it). The last cycle of
        # the interval no longer holds off, so a pending cause rises exactly
        # min_interval_us after the previous rise. Causes are never dropped: they wait in
        # the sticky IRQ_STATUS.
        interval_us = regs.min_interval.us
        m.submodules.rate_limit = limit = MicrosecondTimer(
            us_width=len(interval_us), sys_clk_mhz_width=len(regs.sys_clk_mhz)
        )
        off = interval_us == 0  # also the cycle 0 is written, not only the next
        m.d.comb += self.holdoff.eq(limit.running & ~limit.expires & ~off)
        irq_next = asserted & (self.irq | ~self.holdoff)
        rises = irq_next & ~self.irq
        m.d.comb += [
            limit.us.eq(interval_us),
            limit.sys_clk_mhz.eq(regs.sys_clk_mhz),
            limit.start.eq(rises),
            limit.stop.eq(off),
        ]
        m.d.sync += self.irq.eq(irq_next)
        with m.If(rises):
            m.d.sync += regs.count.eq(regs.count + 1)
        return m
