"""Simulation tops with the frame wire on the SoC's PHY side (simulation only).

:class:`FrameWireTop` wraps ``macdma_soc`` or ``macdma_soc_hostmem``: a
:class:`~.player.FramePlayer` drives the SoC's ``gmii_rx*`` pins (they are no longer
ports) and a :class:`~.recorder.FrameRecorder` watches its ``gmii_tx*`` pins (still
ports, so a bench can watch them too). Every other port is the inner top's, plus:

- ``wire_rst``: the wire's own reset (the PHY's): the SoC's resets (``rst``, ``tx_rst``,
  ``rx_rst``) leave the wire running, as a PHY goes on through its MAC's reset;
- ``wire_mii``: MII mode for the player (the SoC's own mode is a register);
- ``play_*``: the player's frame inputs and record (``play_frame_bytes``,
  ``play_frame_gap``, ``play_frame_errors``, ``play_queued``; ``play_done``,
  ``play_start_cycle``, ``play_sfd_cycle``, ``play_sfd_seen``, ``play_end_cycle``,
  ``play_idle``, ``play_cycle``);
- ``rec_*``: the recorder's record (``rec_frames``, ``rec_samples``, ``rec_errors``,
  ``rec_overflowed``, ``rec_start_cycle``, ``rec_sfd_cycle``, ``rec_sfd_seen``,
  ``rec_end_cycle``, ``rec_cycle``).

The player runs on ``rx_clk`` with ``rx_clk_enable``, the recorder on ``tx_clk`` with
``tx_clk_enable``, as the PHY models they stand in for, both reset by ``wire_rst``. Their
memories are ``wire_rx.play.data_words``, ``wire_rx.play.error_words`` (the player's
own arrays), ``wire_tx.data_words.words`` and ``wire_tx.error_words.words`` (word arrays)
(sim/benches/frame_wire.py reaches them).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from ..bus.axi4_ram import ARRAY_VERILOG
from ..hostmem_top import HostMemSocTop
from ..soc import SocTop
from .player import PLAYER_VERILOG, FramePlayer
from .recorder import FrameRecorder

__all__ = ["FrameWireTop", "HostMemWireSocTop", "WireSocTop"]

_RX_PINS = {"gmii_rxd": "rxd", "gmii_rx_dv": "rx_dv", "gmii_rx_er": "rx_er"}
_TX_PINS = {"gmii_txd": "txd", "gmii_tx_en": "tx_en", "gmii_tx_er": "tx_er"}
_PLAYER_INPUTS = ("frame_bytes", "frame_gap", "frame_errors", "queued")


class FrameWireTop(wiring.Component):
    """``inner`` (a component with the SoC's PHY ports) with the frame wire on them."""

    def __init__(self, inner, *, play_capacity_bytes=16384, record_capacity_samples=32768):
        self.inner = inner
        self.player = FramePlayer(play_capacity_bytes)
        self.recorder = FrameRecorder(record_capacity_samples)
        members = {
            name: member for name, member in inner.signature.members.items() if name not in _RX_PINS
        }
        members["wire_rst"] = In(1)
        members["wire_mii"] = In(1)
        for name, member in self.player.signature.members.items():
            if name in _PLAYER_INPUTS or name not in ("enable", "mii", *_RX_PINS.values()):
                members[f"play_{name}"] = member
        for name, member in self.recorder.signature.members.items():
            if name not in ("enable", *_TX_PINS.values()):
                members[f"rec_{name}"] = member
        super().__init__(members)

    @property
    def extra_verilog(self) -> str:
        """Hand-written Verilog the export carries: the inner top's, the word array the
        recorder's memories use (once) and the player."""
        inner = getattr(self.inner, "extra_verilog", "")
        return (inner if ARRAY_VERILOG in inner else inner + ARRAY_VERILOG) + PLAYER_VERILOG

    def elaborate(self, platform):
        m = Module()
        m.submodules.soc = inner = self.inner
        for domain in ("tx", "rx"):
            m.domains += ClockDomain(f"wire_{domain}", local=True)
            m.d.comb += [
                ClockSignal(f"wire_{domain}").eq(getattr(self, f"{domain}_clk")),
                ResetSignal(f"wire_{domain}").eq(self.wire_rst),
            ]
        m.submodules.wire_rx = DomainRenamer("wire_rx")(self.player)
        m.submodules.wire_tx = DomainRenamer("wire_tx")(self.recorder)
        for name, member in inner.signature.members.items():
            if name in _RX_PINS:
                m.d.comb += getattr(inner, name).eq(getattr(self.player, _RX_PINS[name]))
            elif member.flow == In:
                m.d.comb += getattr(inner, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(inner, name))
        m.d.comb += [
            self.player.enable.eq(self.rx_clk_enable),
            self.player.mii.eq(self.wire_mii),
            self.recorder.enable.eq(self.tx_clk_enable),
        ]
        for top_pin, pin in _TX_PINS.items():
            m.d.comb += getattr(self.recorder, pin).eq(getattr(inner, top_pin))
        for name, member in self.player.signature.members.items():
            if f"play_{name}" in self.signature.members:
                ours, theirs = getattr(self, f"play_{name}"), getattr(self.player, name)
                m.d.comb += theirs.eq(ours) if member.flow == In else ours.eq(theirs)
        for name in self.recorder.signature.members:
            if f"rec_{name}" in self.signature.members:
                m.d.comb += getattr(self, f"rec_{name}").eq(getattr(self.recorder, name))
        return m


class WireSocTop(FrameWireTop):
    """``macdma_soc_wire``: ``macdma_soc`` (``SocTop(**params)``) with the frame wire."""

    def __init__(self, **params):
        super().__init__(SocTop(**params))


class HostMemWireSocTop(FrameWireTop):
    """``macdma_soc_hostmem_wire``: ``macdma_soc_hostmem`` (``HostMemSocTop(memory_bytes,
    **params)``) with the frame wire."""

    def __init__(self, memory_bytes: int = 1 << 21, **params):
        super().__init__(HostMemSocTop(memory_bytes, **params))
