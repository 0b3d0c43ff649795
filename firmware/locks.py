"""The driver's locks (:class:`SpinLock`) and how a context waits for one, as a Linux
driver takes them: ``mutex_lock`` (a sleeping wait, slow paths only) and ``spin_lock_bh``
/ ``spin_lock_irqsave`` (:func:`spin_lock`: raise the context's level, then spin with the
core busy); the CPU contexts (:func:`cpu_context`) those levels belong to; and the cache
lines contexts on different cores hand each other (:class:`SharedLine`)."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import AsyncIterator

from .platform import Platform

__all__ = [
    "LOCK_SPIN_NS",
    "WAKE_POLL_NS",
    "SharedLine",
    "SpinLock",
    "cpu_context",
    "mutex_lock",
    "spin_lock",
]

#: How often a context that must wait for another one re-checks (no event primitive is
#: available without importing a scheduler): wait_for_wake and the ring locks.
WAKE_POLL_NS = 200.0
#: How often a context spinning on a spinlock re-reads it (a cache line bouncing between
#: cores: tens of ns; the spin's resolution).
LOCK_SPIN_NS = 20.0


class SharedLine:
    """Cache lines of driver state that contexts on different cores write and read: a
    lock word, the ring indices, a frame's bookkeeping. Each access from a core whose
    cache holds no valid copy, or a write while another cache holds one, takes the line
    from that cache (a read miss served by the other core, a read-for-ownership or an
    upgrade invalidating it): the access waits the CPU file's ``caches.line_transfer``
    cycles per line, charged as ``line_transfer``. A core's first access to a line no
    cache holds comes from memory, priced elsewhere. Cores are cache domains: two
    hardware threads of one pipeline share their L1, so nothing moves between them.

    Members: ``name``, ``lines`` (lines it stands for, moved together), ``holders`` (the
    caches with a valid copy), ``transfers`` (lines moved so far).
    """

    def __init__(self, name: str, lines: int = 1) -> None:
        if isinstance(lines, bool) or not isinstance(lines, int) or lines < 1:
            raise ValueError(f"a shared line stands for >= 1 cache line, got {lines!r}")
        self.name = name
        self.lines = lines
        self.holders: set[int] = set()
        self.transfers = 0

    def access(self, domain: int, *, write: bool) -> int:
        """Cache ``domain`` reads or writes the line: the lines moved from another cache
        (0 or ``lines``); afterwards a write leaves ``domain`` the only holder."""
        others = self.holders - {domain}
        moved = self.lines if others and (write or domain not in self.holders) else 0
        if write:
            self.holders = {domain}
        else:
            self.holders.add(domain)
        self.transfers += moved
        return moved

    async def touch(self, io, *, write: bool) -> None:
        """The calling context accesses the line through ``io`` (a
        :class:`~.io.DeviceIo`): counted in ``stats.line_transfers`` and charged when it
        moves. Nothing on a platform without cores (no ``cache_domain``) or outside a
        context."""
        where = getattr(io.platform, "cache_domain", None)
        domain = None if where is None else where()
        if domain is None:
            return
        moved = self.access(domain, write=write)
        if moved:
            io.stats.line_transfers += moved
            cycles = moved * io.caches.line_transfer
            if cycles:
                await io.platform.charge(cycles, "line_transfer")


class SpinLock:
    """A named lock of the driver, as a Linux driver has them, with its statistics.

    ``try_acquire`` never waits. How a context waits depends on the path
    (``MacDmaDriver``): xmit and a TX clean configured to take the TX queue lock
    *spin* (the core busy, ``lock_spin``); the NAPI/ring state is a test-and-set (a
    second poller returns at once); the MDIO lock and error recovery *sleep* (a mutex).

    Spinners are served in arrival order, as Linux's ticket and queued spinlocks serve
    them: a context that releases the lock and at once wants it again queues behind the
    one already spinning (without this a tight xmit loop would starve the other core).

    Members: ``name``, ``held``, ``acquisitions``, ``contentions`` (times a context found
    it held), ``spin_ns`` (time spent spinning on it, all cores), ``wait_ns`` (time
    spent sleeping on it), ``spinners`` (the queue of waiting tickets).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.line = SharedLine(name)  # the lock word: every acquisition writes it
        self.held = False
        self.acquisitions = 0
        self.contentions = 0
        self.spin_ns = 0.0
        self.wait_ns = 0.0
        self.spinners: deque[object] = deque()

    def try_acquire(self, ticket: object | None = None) -> bool:
        """Take the lock if it is free and nobody spins ahead of ``ticket`` (None: no
        ticket, so only when nobody spins at all)."""
        if self.held or (self.spinners and self.spinners[0] is not ticket):
            return False
        if ticket is not None:
            self.spinners.popleft()
        self.held = True
        self.acquisitions += 1
        return True

    def release(self) -> None:
        """Let the lock go (the next spinner in line takes it at its next check)."""
        self.held = False

    def report(self) -> dict:
        """The lock's statistics, for the run's record."""
        return {
            "acquisitions": self.acquisitions,
            "contentions": self.contentions,
            "spin_ns": self.spin_ns,
            "wait_ns": self.wait_ns,
        }


def cpu_context(platform: Platform, level: str, core: int | None = None):
    """``async with`` a CPU context of ``level`` ("hardirq", "softirq", "process") on
    a platform with a scheduler (``platform.context``); a no-op on one without.
    ``core`` places a new context (None: the caller's, or core 0)."""
    enter = getattr(platform, "context", None)
    if enter is None:
        return contextlib.nullcontext()
    return enter(level) if core is None else enter(level, core=core)


async def mutex_lock(platform: Platform, lock: SpinLock) -> None:
    """Wait until another context releases ``lock``. A *sleeping* wait (a mutex): the
    contexts that use it are slow paths (error recovery, MDIO), and a spin in a hard
    IRQ on a lock held by the context it preempted would never end."""
    if lock.try_acquire():
        return
    lock.contentions += 1
    started = platform.now_ns()
    while not lock.try_acquire():
        await platform.sleep_ns(WAKE_POLL_NS)
    lock.wait_ns += platform.now_ns() - started


@contextlib.asynccontextmanager
async def spin_lock(platform: Platform, lock: SpinLock, level: str, io=None) -> AsyncIterator[None]:
    """``spin_lock_bh`` / ``spin_lock_irqsave``: raise the running context to
    ``level`` (so no context on this core that takes the lock can preempt the holder),
    then spin until ``lock`` is free -- only a context on another core can hold it --
    with the core busy (``lock_spin``). With ``io`` (a :class:`~.io.DeviceIo`), taking
    it writes the lock's line (:class:`SharedLine`): last taken on another core, the
    line moves."""
    async with cpu_context(platform, level):
        if not lock.try_acquire():
            lock.contentions += 1
            started = platform.now_ns()
            spin = getattr(platform, "spin_ns", None)
            ticket = object()
            lock.spinners.append(ticket)
            while not lock.try_acquire(ticket):
                if spin is not None:
                    await spin(LOCK_SPIN_NS, "lock_spin")
                else:  # a platform without a CPU model: time passes all the same
                    await platform.sleep_ns(LOCK_SPIN_NS)
            lock.spin_ns += platform.now_ns() - started
        if io is not None:
            await lock.line.touch(io, write=True)
        try:
            yield
        finally:
            lock.release()
