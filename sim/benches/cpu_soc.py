"""cocotb bench around ``macdma_soc_cpu``: the SoC driven by the C driver on the soft core
(hdl/cpu/, firmware/c/), with cocotbext-eth's GMII models on the wire and the shared host
memory inside the design.

The bench loads the firmware image and its configuration (``fw_config``, firmware/c/abi.py)
into the core's RAM through the array's handle while ``rst`` holds the core, releases it,
and from then on only watches: the wire, the ``irq`` pin, the firmware's console and exit
ports; it drives the COMMAND word (the RX sink's stop). The firmware's results and RX log
are read from its RAM once it has exited.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge, Timer, with_timeout

from macdma.firmware.c import abi
from macdma.firmware.c.build import FirmwareImage, build_firmware

from .gmii import GMII_1000, GmiiPhy, LinkMode, start_clock
from .hdl_memory import HdlHostMemory

__all__ = ["CpuRamBackdoor", "CpuSocBench", "FirmwareExit"]

WORD_BYTES = 4
#: What the firmware prints once its device is open and its buffers are set up
#: (firmware/c/main.c); the bench sends nothing before it.
READY_BANNER = b"ready\n"
# cocotb's GPI write action "no delay" (as in hdl_memory.py).
_GPI_NO_DELAY = 3


class FirmwareExit(AssertionError):
    """The firmware exited with a code other than ok, or did not exit in time; the
    message carries its console output and, for an exception, mcause/mepc/mtval."""


class CpuRamBackdoor:
    """The core's RAM words (``cpu.ram.array.words``), read and written at once through
    the simulator's handle, by CPU address."""

    def __init__(self, dut, base: int):
        self._words = dut.cpu.ram.array.words._handle
        self.size = len(dut.cpu.ram.array.words) * WORD_BYTES
        self.base = base
        self._handles: dict[int, object] = {}

    def _word(self, index: int):
        handle = self._handles.get(index)
        if handle is None:
            handle = self._handles[index] = self._words.get_handle_by_index(index)
        return handle

    def _index(self, address: int, words: int) -> int:
        offset = address - self.base
        if offset % WORD_BYTES or offset < 0 or offset + words * WORD_BYTES > self.size:
            raise ValueError(
                f"{words} words at 0x{address:08x} are not word-aligned inside the core's "
                f"RAM (0x{self.base:08x}, {self.size} bytes)"
            )
        return offset // WORD_BYTES

    def write_words(self, address: int, words: list[int]) -> None:
        first = self._index(address, len(words))
        for index, word in enumerate(words):
            self._word(first + index).set_signal_val_int(_GPI_NO_DELAY, word)

    def read_words(self, address: int, count: int) -> list[int]:
        first = self._index(address, count)
        return [int(self._word(first + i).get_signal_val_binstr(), 2) for i in range(count)]


class CpuSocBench:
    """Everything around one ``macdma_soc_cpu``: clocks, resets, the firmware, the PHY
    models, the host memory's backdoor (``memory``) and the counts the bench keeps itself
    (``irq_rises``: rising edges of the SoC's ``irq``; ``console``: what the firmware
    printed)."""

    def __init__(
        self,
        dut,
        mode: LinkMode = GMII_1000,
        *,
        sys_clk_ns: float = 10.0,
        ifg: int = 12,
        # The top's default: what `macdma run --cpu vexriscv-rtl` builds for its default
        # rings (sim/run/scenario.py memory_bytes_for), so the tests and it share one build.
        memory_bytes: int = 1 << 22,
    ):
        self.dut = dut
        self.mode = mode
        self.sys_clk_ns = sys_clk_ns
        self.phy = GmiiPhy(dut, mode, ifg)
        self.tx_sink = self.phy.tx_sink
        self.rx_source = self.phy.rx_source
        self.memory = HdlHostMemory(dut, memory_bytes)
        self.memory_bytes = memory_bytes
        ram_bytes = len(dut.cpu.ram.array.words) * WORD_BYTES
        self.firmware: FirmwareImage = build_firmware(ram_bytes)
        self.ram = CpuRamBackdoor(dut, self.firmware.base)
        self.irq_rises = 0
        self.console = bytearray()

    async def start(self, **config: int) -> None:
        """Clocks and resets; the firmware and ``fw_config`` (abi.config_words(**config),
        its host memory the bench's above ``dma_base``) loaded while the core is held;
        then the core runs."""
        dut = self.dut
        dut.mdio_i.value = 1
        dut.fw_command.value = abi.COMMANDS["run"]
        for reset in (dut.rst, dut.tx_rst, dut.rx_rst):
            reset.value = 1
        start_clock(dut.clk, self.sys_clk_ns)
        self.phy.start()
        self.memory.start()
        await ClockCycles(dut.clk, 4)
        config.setdefault("dma_base", abi.CONFIG_DEFAULTS["dma_base"])
        config.setdefault("dma_bytes", self.memory_bytes - config["dma_base"])
        config.setdefault("sys_clk_mhz", round(1000 / self.sys_clk_ns))
        self.ram.write_words(self.firmware.base, self.firmware.words())
        self.ram.write_words(self.firmware.address("fw_config"), abi.config_words(**config))
        cocotb.start_soon(self._count_irqs())
        cocotb.start_soon(self._collect_console())
        await ClockCycles(dut.clk, 4)
        for reset in (dut.rst, dut.tx_rst, dut.rx_rst):
            reset.value = 0

    async def _count_irqs(self) -> None:
        while True:
            await RisingEdge(self.dut.irq)
            self.irq_rises += 1

    async def _collect_console(self) -> None:
        while True:
            await RisingEdge(self.dut.fw_console_valid)
            # The byte changes in the same clock edge: read it once the step has settled
            # (Icarus calls back on the strobe before it applied the data).
            await ReadOnly()
            self.console.append(int(self.dut.fw_console_data.value))

    async def wait_ready(self, timeout_us: float = 5000) -> None:
        """Wait until the firmware printed :data:`READY_BANNER`."""
        waited = 0.0
        while READY_BANNER not in self.console:
            if int(self.dut.fw_exit_valid.value) or waited >= timeout_us:
                await self.wait_exit(timeout_us=0.001)  # raises, naming why
                raise FirmwareExit(f"the firmware exited before it was ready: {self.console!r}")
            await Timer(5, "us")
            waited += 5
        self.console.clear()

    def command(self, name: str) -> None:
        """Drive COMMAND (abi.COMMANDS: ``run``, ``stop``)."""
        self.dut.fw_command.value = abi.COMMANDS[name]

    async def wait_exit(self, timeout_us: float) -> dict[str, int]:
        """Wait for the firmware's exit; return its results (abi.RESULT_FIELDS by name).
        Raises :class:`FirmwareExit` unless it exited ok within ``timeout_us``."""
        dut = self.dut
        if not int(dut.fw_exit_valid.value):
            if timeout_us < 0.01:
                raise FirmwareExit(
                    f"the firmware has not exited; results so far: {self.results()}; "
                    f"console: {self.console.decode(errors='replace')!r}"
                )
            try:
                await with_timeout(RisingEdge(dut.fw_exit_valid), timeout_us, "us")
            except TimeoutError:
                raise FirmwareExit(
                    f"the firmware did not exit within {timeout_us} µs; results so far: "
                    f"{self.results()}; console: {self.console.decode(errors='replace')!r}"
                ) from None
        await Timer(1, "ns")
        code = int(dut.fw_exit_code.value)
        results = self.results()
        if code != abi.EXIT_CODES["ok"]:
            names = {value: name for name, value in abi.EXIT_CODES.items()}
            trap = {key: hex(results[key]) for key in ("mcause", "mepc", "mtval")}
            raise FirmwareExit(
                f"the firmware exited with {names.get(code, code)!r} ({code}); {trap}; "
                f"console: {self.console.decode(errors='replace')!r}"
            )
        if results["magic"] != abi.RESULTS_MAGIC:
            raise FirmwareExit(f"the firmware exited ok without its results: {results}")
        return results

    def results(self) -> dict[str, int]:
        """``fw_results`` as it is in RAM now."""
        fields = abi.RESULT_FIELDS
        words = self.ram.read_words(self.firmware.address("fw_results"), len(fields))
        return {field.name: word for field, word in zip(fields, words, strict=True)}

    def rx_log(self, entries: int) -> list[dict[str, int]]:
        """The first ``entries`` entries of the RX sink's log."""
        fields = abi.RX_LOG_FIELDS
        words = self.ram.read_words(self.firmware.address("fw_rx_log"), entries * len(fields))
        return [
            {field.name: words[i * len(fields) + k] for k, field in enumerate(fields)}
            for i in range(entries)
        ]
