"""The driver's documented way in for a bench (firmware/hooks.py and the public recovery
paths), and the rule that holds every module outside firmware/ to it.

The rule, checked on the source of sim/ and tests/ (an AST walk): a driver object is
spelled ``driver`` (a name, or an attribute ``.driver``; not a parameter annotated as
another class), or is a local bound to a member reached from one through attributes
(``tx = self.driver.tx``; a call's result is not a member). Reached from a driver, no
attribute may be private (``driver._recover_tx``, ``driver.tx._frames_synced``,
``getattr(driver, "_x")``), and no member may be assigned but the ones the driver
documents as settable (its callbacks, and ``config`` before an open): no queue swapped
(``driver.tx = MyRing(...)``), no method replaced (``driver.tx.post = ...``). The rule
relies on the spelling, so that is checked too: every ``MacDmaDriver(...)`` outside
firmware/ is bound to ``driver`` or ``<something>.driver``.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from driver_fakes import FakeDevice, FakePlatform, make, ring_desc, run

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.firmware.driver import DriverConfig, DriverHooks, MacDmaDriver, QueueHooks

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("sim", "tests")
DRIVER = "driver"
#: What a user may set on a driver (MacDmaDriver's docstring): the callbacks, and the
#: configuration the next open programs.
SETTABLE = {"on_receive", "on_tx_timestamp", "on_tx_dropped", "on_gro_flush", "config"}


# -- the rule --------------------------------------------------------------------------------


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _reaches_driver(node: ast.AST, aliases: set[str]) -> bool:
    """``node`` is a driver, or a member reached from one through attributes and
    subscripts (``driver.tx``, ``self.driver.locks["mdio"]``). A call's result is a new
    object (``driver.tx.read(0)`` is a Descriptor), not a member."""
    while True:
        if isinstance(node, ast.Attribute):
            if node.attr == DRIVER:
                return True
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.IfExp):
            return _reaches_driver(node.body, aliases) and _reaches_driver(node.orelse, aliases)
        else:
            return isinstance(node, ast.Name) and (node.id == DRIVER or node.id in aliases)


def _other_drivers(tree: ast.AST) -> set[int]:
    """The nodes inside functions whose parameter ``driver`` is annotated as another class
    (a bench's own minimal driver, ``driver: RxDriver``): not the driver model's."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for arg in node.args.args + node.args.kwonlyargs:
                note = arg.annotation
                if (
                    arg.arg == DRIVER
                    and note is not None
                    and "MacDmaDriver" not in ast.unparse(note)
                ):
                    skipped.update(id(inner) for inner in ast.walk(node))
    return skipped


def _aliases(tree: ast.AST) -> set[str]:
    """Local names bound to something reached from a driver (to a fixed point)."""
    aliases: set[str] = set()
    while True:
        found = set(aliases)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                for name, value in pairs:
                    if isinstance(name, ast.Name) and _reaches_driver(value, aliases):
                        found.add(name.id)
        if found == aliases:
            return aliases
        aliases = found


def violations(source: str, filename: str = "<snippet>") -> list[str]:
    """Every place in ``source`` that breaks the rule, as ``file:line: what``."""
    tree = ast.parse(source, filename)
    aliases = _aliases(tree)
    skipped = _other_drivers(tree)
    found = []

    def report(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if _reaches_driver(node.value, aliases):
                report(node, f"private driver member {ast.unparse(node)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("getattr", "setattr", "delattr") and len(node.args) >= 2:
                obj, name = node.args[:2]
                if _reaches_driver(obj, aliases) and (
                    node.func.id != "getattr"
                    or isinstance(name, ast.Constant)
                    and _private(str(name.value))
                ):
                    report(node, f"{ast.unparse(node)} on a driver")
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        while any(isinstance(t, ast.Tuple | ast.List | ast.Starred) for t in targets):
            targets = [
                inner
                for t in targets
                for inner in (
                    t.elts
                    if isinstance(t, ast.Tuple | ast.List)
                    else [t.value]
                    if isinstance(t, ast.Starred)
                    else [t]
                )
            ]
        for leaf in targets:
            if isinstance(leaf, ast.Subscript) and _reaches_driver(leaf.value, aliases):
                report(leaf, f"assigns into driver member {ast.unparse(leaf)}")
            if not isinstance(leaf, ast.Attribute) or not _reaches_driver(leaf.value, aliases):
                continue
            direct = isinstance(leaf.value, ast.Name | ast.Attribute) and (
                getattr(leaf.value, "id", None) == DRIVER
                or getattr(leaf.value, "attr", None) == DRIVER
            )
            if not (direct and leaf.attr in SETTABLE):
                report(leaf, f"assigns driver member {ast.unparse(leaf)}")
    return found


def misspelled_drivers(source: str, filename: str = "<snippet>") -> list[str]:
    """``MacDmaDriver(...)`` calls not bound to ``driver`` / ``<x>.driver``."""
    tree = ast.parse(source, filename)
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {getattr(t, "id", None) or getattr(t, "attr", None) for t in targets}
            if names == {DRIVER}:
                bound.add(id(node.value))
    return [
        f"{filename}:{node.lineno}: {ast.unparse(node)[:60]} is not bound to 'driver'"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "MacDmaDriver"
        and id(node) not in bound
    ]


def _sources():
    for folder in CHECKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text()


def test_no_module_outside_firmware_touches_a_private_driver_member_or_replaces_one():
    found = [line for name, text in _sources() for line in violations(text, name)]
    assert not found, "modules outside firmware/ reach into the driver:\n" + "\n".join(found)


def test_driver_objects_outside_firmware_are_spelled_driver():
    found = [line for name, text in _sources() for line in misspelled_drivers(text, name)]
    assert not found, "the private-member rule cannot see these drivers:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "snippet",
    [
        # What the soak bench did before the hooks (sim/soak/soak_tb.py).
        "recover = self.driver._recover_tx if tx else self.driver._recover_rx",
        "self.driver.tx = SoakTxRing(self.platform, config.tx_ring, soak.guard)",
        "driver.tx.offsets = list(layout.offsets)",
        # What the write-order bench did (tests/cocotb/driver_order_tb.py).
        "driver.tx.post = types.MethodType(own_first_post, driver.tx)",
        # Around an alias, through getattr, augmented, deleted.
        "tx, rx = self.driver.tx, self.driver.rx\nseen = tx._packets_synced",
        "ring = driver.tx if channel == 'tx' else driver.rx\nring.double_posts += 1",
        "value = getattr(run.driver, '_mmio_write')",
        "setattr(driver, 'xmit', fake)",
        "del driver.rx",
        "driver.hw_totals['TX_DROPS'] = 0",
        "(driver.tx, other) = (ring, 1)",
        "driver.stats = None",
    ],
)
def test_the_rule_catches_a_reach_into_the_driver(snippet):
    assert violations(snippet), f"not caught: {snippet}"


def test_the_rule_lets_documented_use_through():
    allowed = (
        "driver.on_tx_dropped = self._tx_dropped\n"
        "self.driver.on_receive = receive\n"
        "driver.config = dataclasses.replace(driver.config, ptp=True)\n"
        "await self.driver.tx_timeout()\n"
        "slots = driver.tx.size + driver.rx.double_posts\n"
        "self.tx_hooks.offsets = [1, 2]\n"
        "other._private = 1\n"
    )
    assert violations(allowed) == []
    assert misspelled_drivers("self.driver = MacDmaDriver(p, c)\ndriver = MacDmaDriver(p, c)") == []
    assert misspelled_drivers("drv = MacDmaDriver(p, c)")
    assert misspelled_drivers("run(MacDmaDriver(p, c))")


# -- the hooks ------------------------------------------------------------------------------


class Recorder(QueueHooks):
    """Records every call; can corrupt the next post or place the next TX fragments."""

    def __init__(self, place_at: int | None = None) -> None:
        self.posts: list[tuple[int, Descriptor]] = []
        self.reads: list[tuple[int, Descriptor]] = []
        self.zero_next = False
        self.place_at = place_at

    def map_fragment(self, queue, index, data):
        if self.place_at is None:
            return None
        address, self.place_at = self.place_at, self.place_at + 0x1000
        queue.platform.mem_write(address, data)
        return address

    def post(self, queue, index, desc):
        if self.zero_next:
            self.zero_next = False
            desc = dataclasses.replace(desc, length=0)
        self.posts.append((index, desc))
        return desc

    def read(self, queue, index, desc):
        self.reads.append((index, desc))


async def _hooked(tx: QueueHooks, rx: QueueHooks, **config):
    platform = FakePlatform()
    device = FakeDevice(platform)
    received: list = []
    driver = MacDmaDriver(
        platform,
        DriverConfig(**config),
        lambda frame, ok, meta: received.append(frame),
        hooks=DriverHooks(tx=tx, rx=rx),
    )
    await driver.open()
    return driver, platform, device, received


def test_hooks_see_every_post_and_read_and_can_corrupt_a_descriptor():
    async def body():
        tx, rx = Recorder(), Recorder()
        driver, p, device, received = await _hooked(tx, rx, tx_ring=8, rx_ring=4, rx_buf=128)
        assert [i for i, _ in rx.posts] == [0, 1, 2]  # open posts rx_ring - 1 buffers
        tx.zero_next = True
        assert await driver.xmit([b"\x11" * 40, b"\x22" * 30])
        assert [(i, d.length) for i, d in tx.posts] == [(0, 0), (1, 30)]
        assert ring_desc(p, regs.TX_RING_BASE, 0).length == 0  # the corrupted one, posted
        assert ring_desc(p, regs.TX_RING_BASE, 1).length == 30
        device.receive(b"\x5a" * 100)
        await driver.rx_poll(None)
        written_back = [(i, d.done_length) for i, d in rx.reads if not d.own]
        assert written_back[0] == (0, 100) and received == [b"\x5a" * 100]
        # A post on a slot the DMA still owns: the hook sees it, the ring refuses it.
        slot = driver.rx.next_to_clean
        before = len(rx.posts)
        driver.rx.post(slot, rx.posts[-1][1])
        assert len(rx.posts) == before + 1 and driver.rx.double_posts == 1

    run(body())


def test_map_fragment_hook_places_tx_fragments_where_the_bench_wants():
    async def body():
        driver, p, device, _ = await _hooked(Recorder(place_at=0x200001), QueueHooks())
        assert await driver.xmit([b"\x33" * 50, b"\x44" * 20])
        assert ring_desc(p, regs.TX_RING_BASE, 0).addr == 0x200001
        assert ring_desc(p, regs.TX_RING_BASE, 1).addr == 0x201001
        device.complete_tx()
        assert device.sent == [b"\x33" * 50 + b"\x44" * 20]

    run(body())


def test_tx_timeout_drops_what_is_queued_and_restarts_the_channel():
    async def body():
        driver, p, device, _ = await make(tx_ring=8, max_frags=1)
        dropped = []
        driver.on_tx_dropped = dropped.append
        for n in range(3):
            assert await driver.xmit([bytes([n]) * 64])
        device.complete_tx(count=1, irq=False)  # one frame done, two stuck
        p.mmio_log.clear()
        await driver.tx_timeout()
        assert driver.stats.tx_packets == 1 and driver.stats.tx_dropped == 2
        assert dropped == [1, 2] and not driver.queue_stopped
        assert p.writes_to(regs.TX_CTRL) == [regs.TX_CTRL_RESET_MASK, regs.TX_CTRL_RUN_MASK]
        assert p.writes_to(regs.TX_TAIL) == [0] and driver.tx.next_to_use == 0
        assert await driver.xmit([b"\x99" * 64])  # the queue runs again from slot 0
        device.complete_tx()
        assert device.sent[-1] == b"\x99" * 64

    run(body())


def test_rx_recover_delivers_what_completed_and_reposts_the_ring():
    async def body():
        driver, p, device, received = await make(rx_ring=8, rx_buf=64)
        device.receive(b"\x01" * 60, irq=False)
        device.receive(b"\x02" * 150, complete=False, irq=False)  # cut by the "halt"
        p.mmio_log.clear()
        await driver.rx.recover()
        assert [f for f, _, _ in received] == [b"\x01" * 60]
        assert driver.stats.rx_dropped == 1  # the frame without its EOP
        assert p.writes_to(regs.RX_CTRL) == [regs.RX_CTRL_RESET_MASK, regs.RX_CTRL_RUN_MASK]
        assert p.writes_to(regs.RX_TAIL) == [7] and driver.rx.next_to_clean == 0

    run(body())


def test_hooks_are_checked():
    with pytest.raises(ValueError, match="must be a DriverHooks"):
        driver = MacDmaDriver(FakePlatform(), DriverConfig(), hooks=QueueHooks())
        assert driver is None
    with pytest.raises(ValueError, match=r"DriverHooks.rx = .* must be a QueueHooks"):
        DriverHooks(rx=object())
