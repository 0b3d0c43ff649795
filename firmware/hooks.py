"""The documented way in for a test bench: :class:`QueueHooks` on each of the driver's
queues (:class:`DriverHooks`), given to ``MacDmaDriver(..., hooks=...)``.

A bench that injects a driver fault or checks the DMA's use of host memory subclasses
:class:`QueueHooks` and overrides what it needs; the driver calls the hooks at the three
points where a queue hands memory to the DMA or takes it back, with the queue (a
:class:`~.tx_queue.TxQueue` or :class:`~.rx_queue.RxQueue`) as first argument. The
defaults change nothing, so a driver without hooks is the driver. The recovery paths a
bench may want to trigger are public methods of the driver and its queues
(``MacDmaDriver.tx_timeout``, ``RxQueue.recover``, ``MacDmaDriver.reset_device``): a bench
never replaces a member of the driver nor calls a private one (tests/firmware/test_hooks.py
holds every module outside firmware/ to that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .descriptor import Descriptor

__all__ = ["DriverHooks", "QueueHooks"]


class QueueHooks:
    """Hooks on one queue's descriptor ring; every method's default does nothing.

    - :meth:`map_fragment` (TX only): where a TX fragment goes (``dma_map_single``).
    - :meth:`post`: every descriptor the driver posts, before the ring writes it.
    - :meth:`read`: every descriptor the driver reads back, before it tests ``own``.
    """

    def map_fragment(self, queue: Any, index: int, data: bytes) -> int | None:
        """Map the fragment ``data`` for TX ring slot ``index``: return the bus address
        where the hook has stored it (through ``queue.platform.mem_write``, as the CPU
        stores), or None to let the queue copy it into the slot's own DMA buffer."""
        return None

    def post(self, queue: Any, index: int, desc: Descriptor) -> Descriptor:
        """The descriptor the driver is about to post at ``index``; return the one to
        post (the same, or a faulty one). Called for every post, also one the ring then
        refuses because the slot is still the DMA's (``queue.handed_over(index)``)."""
        return desc

    def read(self, queue: Any, index: int, desc: Descriptor) -> None:
        """The descriptor at ``index`` as the driver just read it back from memory (a
        write-back when ``own`` is 0)."""


@dataclass(frozen=True)
class DriverHooks:
    """The hooks of the TX and the RX queue (each a :class:`QueueHooks`)."""

    tx: QueueHooks = field(default_factory=QueueHooks)
    rx: QueueHooks = field(default_factory=QueueHooks)

    def __post_init__(self) -> None:
        for name in ("tx", "rx"):
            if not isinstance(getattr(self, name), QueueHooks):
                raise ValueError(
                    f"DriverHooks.{name} = {getattr(self, name)!r} must be a QueueHooks"
                )
