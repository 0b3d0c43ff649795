"""What the driver's work costs on the modelled CPU, in CPU cycles.

The driver charges every step to the platform as ``platform.charge(cycles, "<field>")``
where ``<field>`` is the name of a :class:`CpuCosts` field, so the accounting can say
where the cycles went (IRQ entry, descriptor filling, cache maintenance, ...). All costs
default to 0: ``CpuCosts()`` is the *ideal* CPU, on which only the bus time of MMIO
accesses (added by the platform) takes any time.

The clock is not part of the table: a CPU is a clock, cores and this table, described in
a CPU file (``sim/model/cpus/<name>.toml``, docs/cpus.md); the shipped ones are calibrated
against the field reports (docs/field-reports.md). DMA cache maintenance is not a cost of
this table: the CPU file's caches price it per line, per level and per pass
(:class:`~.cache.CacheHierarchy`). Pure Python: no cocotb, no asyncio.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["CpuCosts"]


@dataclass(frozen=True)
class CpuCosts:
    """The cost table: CPU cycles per unit of driver work (floats, >= 0).

    Members:
        irq_entry_exit: Hardware interrupt entry and exit (vector, save/restore, EOI).
        mmio_read: CPU overhead per register read, on top of the bus time the platform adds.
        mmio_write: CPU overhead per register write, likewise.
        tx_per_packet: Stack work per transmitted packet (skb, protocol headers, pktgen).
        tx_per_descriptor: Filling one TX descriptor.
        tx_per_fragment_map: DMA-mapping one TX fragment.
        tx_clean_per_descriptor: Reaping one written-back TX descriptor and unmapping it.
        rx_per_packet: Stack work per received packet.
        rx_per_descriptor: Reading one RX write-back and writing its slot's new
            descriptor (the ring bookkeeping; the buffer's allocation and mapping below).
        rx_map_call: One dma_map_single or dma_unmap_single call chain for an RX buffer,
            without its cache maintenance (priced per line by the CPU file's caches).
        rx_skb_alloc: Allocating an RX buffer as an skb before reception
            (netdev_alloc_skb: the sk_buff and its data, ``rx_buffers`` alloc_map).
        rx_frag_alloc: Allocating an RX buffer as a page fragment (napi_alloc_frag,
            ``rx_buffers`` build_skb).
        rx_build_skb: Building the skb around a filled buffer at reception (build_skb,
            ``rx_buffers`` build_skb and page_pool).
        gro_per_segment: GRO's work per received segment merged into a batch
            (dev_gro_receive, tcp_gro_receive); with ``gro`` the stack's
            ``rx_per_packet`` is paid once per merged batch instead of per segment.
        rx_page_recycle: Taking a recycled page from the page pool for the ring and
            returning it when the stack frees the skb (``rx_buffers`` page_pool).
        per_byte_copy: Per byte the stack copies a received frame (0 when it does not).
        napi_poll_overhead: One NAPI poll (softirq, napi_complete bookkeeping).
        timer_list_arm: Arming (or re-arming) a timer_list with mod_timer (``tx_timer``).
        hrtimer_arm: Arming (or re-arming) an hrtimer with hrtimer_start: its rbtree and
            the clock event's reprogramming (``tx_timer``).
        timer_tick_overhead: One timer tick's softirq callback bookkeeping (polling loop
            or TX housekeeping); the tick's interrupt entry is charged as irq_entry_exit.
        socket_send_per_packet: An application's socket send of one packet (the syscall,
            UDP/IP output, the qdisc) before xmit; traffic models udp, stream, rr.
        socket_recv_per_packet: An application's socket receive of one packet (the
            syscall and the socket queue; the bytes copied are per_byte_copy, charged by
            the stack at receive); udp, stream, rr.
        forward_per_packet: Routing one received packet back out (IP forward, NAT
            conntrack lookup, the qdisc); traffic model forward.

    Driver variants (DriverConfig):
        per_byte_memcpy: The instructions of a kernel memcpy, per byte: a fragmented TX
            frame copied into one buffer (``linearize``), a TX bounce buffer
            (``tx_bounce``), the RX IP-alignment fix-up (``rx_fixup``). Bytes the copy
            loads from memory rather than the cache are memory traffic on top.
        per_byte_csum: Per byte the stack checksums in software (csum_partial over the
            UDP segment) when the frame's checksum is not offloaded (``tx_checksum`` sw).
    """

    irq_entry_exit: float = 0.0
    mmio_read: float = 0.0
    mmio_write: float = 0.0
    tx_per_packet: float = 0.0
    tx_per_descriptor: float = 0.0
    tx_per_fragment_map: float = 0.0
    tx_clean_per_descriptor: float = 0.0
    rx_per_packet: float = 0.0
    rx_per_descriptor: float = 0.0
    rx_map_call: float = 0.0
    rx_skb_alloc: float = 0.0
    rx_frag_alloc: float = 0.0
    rx_build_skb: float = 0.0
    rx_page_recycle: float = 0.0
    gro_per_segment: float = 0.0
    per_byte_copy: float = 0.0
    napi_poll_overhead: float = 0.0
    timer_tick_overhead: float = 0.0
    timer_list_arm: float = 0.0
    hrtimer_arm: float = 0.0
    # -- driver variants (DriverConfig) --
    per_byte_memcpy: float = 0.0
    per_byte_csum: float = 0.0
    # -- traffic models (sim/run/traffic.py) --
    socket_send_per_packet: float = 0.0
    socket_recv_per_packet: float = 0.0
    forward_per_packet: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"CpuCosts.{f.name} = {value!r} must be a number >= 0")

    @classmethod
    def cost_names(cls) -> tuple[str, ...]:
        """The names the driver passes to ``platform.charge``: every field."""
        return tuple(f.name for f in fields(cls))
