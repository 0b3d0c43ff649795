"""What a queue, a timer and the MDIO bus need of the device they belong to: the
:class:`NetDevice` protocol, which :class:`~.driver.MacDmaDriver` satisfies. The parts of a
driver take the device by this description (as a kernel driver's queues reach their
``net_device`` through its private data), so they do not import the device's module and
no import runs back from them to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .config import DriverConfig, IrqStrategy
from .io import DeviceIo
from .platform import Platform
from .ptp import Phc
from .stats import DriverStats


class NetDevice(Protocol):
    """The device's members its parts use (docs: :class:`~.driver.MacDmaDriver`)."""

    config: DriverConfig
    strategy: IrqStrategy
    platform: Platform
    io: DeviceIo
    stats: DriverStats
    phc: Phc
    is_open: bool
    napi_scheduled: bool
    tx_timer: Any  # the TxCoalesceTimer (firmware/tx_timer.py), which takes a NetDevice
    on_receive: Callable[..., Any] | None
    on_gro_flush: Callable[[], Any] | None
    on_tx_timestamp: Callable[[int], None] | None
    on_tx_dropped: Callable[[int], None] | None
