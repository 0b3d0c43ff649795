"""The soft core's address map: one table that the CPU subsystem's decoder, the firmware's
generated header (``soc_cpu_map.h``) and the linker script all read.

VexRiscv_Full caches every address with bit 31 clear and passes every address with bit 31
set straight to the bus (its ``isIoAccess``), so the map puts memory below 0x8000_0000 and
devices above it, with an uncached alias of the host memory for what the driver wants
coherent without cache maintenance.

======================  ==============  ==================================================
region                  CPU address     reaches
======================  ==============  ==================================================
``HOST_MEMORY``         0x0000_0000     host memory (the DMA's, same addresses), cached
``RAM``                 0x4000_0000     on-chip RAM: code, data, stack (reset vector)
``HOST_MEMORY_IO``      0x8000_0000     host memory again, uncached (AXI address - base)
``CSR``                 0xF000_0000     the SoC's AXI4-Lite registers (4 KiB)
``TIMER``               0xF001_0000     machine timer: mtime, mtimecmp (64 bits each)
``FIRMWARE_PORT``       0xF002_0000     console byte, exit code, command word (the bench)
======================  ==============  ==================================================
"""

from dataclasses import dataclass

__all__ = [
    "CSR",
    "FIRMWARE_PORT",
    "FIRMWARE_PORT_REGISTERS",
    "HOST_MEMORY",
    "HOST_MEMORY_IO",
    "RAM",
    "REGIONS",
    "TIMER",
    "TIMER_REGISTERS",
    "Region",
]


@dataclass(frozen=True)
class Region:
    """A window of the CPU's address space: ``base`` and ``size`` bytes (a power of two,
    ``base`` a multiple of it), ``cached`` by VexRiscv (bit 31 of the address clear)."""

    name: str
    base: int
    size: int
    doc: str

    def __post_init__(self):
        if self.size & (self.size - 1) or self.base % self.size:
            raise ValueError(f"region {self.name}: size 0x{self.size:x} at 0x{self.base:x}")

    @property
    def cached(self) -> bool:
        return not self.base >> 31

    def contains(self, address: int) -> bool:
        return self.base <= address < self.base + self.size


HOST_MEMORY = Region("HOST_MEMORY", 0x0000_0000, 1 << 30, "host memory, cached")
RAM = Region("RAM", 0x4000_0000, 1 << 30, "on-chip RAM (its size is the build's)")
HOST_MEMORY_IO = Region("HOST_MEMORY_IO", 0x8000_0000, 1 << 30, "host memory, uncached")
CSR = Region("CSR", 0xF000_0000, 1 << 12, "the SoC's registers (macdma_regs.h)")
TIMER = Region("TIMER", 0xF001_0000, 1 << 4, "machine timer")
FIRMWARE_PORT = Region("FIRMWARE_PORT", 0xF002_0000, 1 << 4, "the firmware's bench port")
REGIONS = (HOST_MEMORY, RAM, HOST_MEMORY_IO, CSR, TIMER, FIRMWARE_PORT)

#: Byte offsets in ``TIMER``: mtime counts system clocks; the core's timer interrupt is
#: ``mtime >= mtimecmp`` (mtimecmp resets to all ones: no interrupt).
TIMER_REGISTERS = {"MTIME_LO": 0x0, "MTIME_HI": 0x4, "MTIMECMP_LO": 0x8, "MTIMECMP_HI": 0xC}

#: Byte offsets in ``FIRMWARE_PORT``: CONSOLE (write: one byte out), EXIT (write: the
#: firmware's exit code, held), COMMAND (read: a word the bench drives), ALIVE (read:
#: 0x600DF00D, so the firmware can check the map).
FIRMWARE_PORT_REGISTERS = {"CONSOLE": 0x0, "EXIT": 0x4, "COMMAND": 0x8, "ALIVE": 0xC}
FIRMWARE_PORT_ALIVE = 0x600DF00D
