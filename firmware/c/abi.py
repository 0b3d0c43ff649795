"""What the bench and the C firmware exchange through the core's RAM: the run's
configuration (``fw_config``, written by the bench before the core leaves reset) and the
results (``fw_results``, written by the firmware before it exits), and the RX sink's log of
the frames it received (``fw_rx_log``).

One source of truth: the build step generates ``fw_abi.h`` (the C structs) from these
tables, and the bench reads and writes the same fields by their offsets here. Every field
is a 32-bit word.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import IrqStrategyName

__all__ = [
    "COMMANDS",
    "CONFIG_DEFAULTS",
    "CONFIG_FIELDS",
    "CONFIG_MAGIC",
    "EXIT_CODES",
    "MODES",
    "NO_FAULT",
    "RESULT_FIELDS",
    "RESULTS_MAGIC",
    "RX_LOG_ENTRIES",
    "RX_LOG_FIELDS",
    "TX_LOG_ENTRIES",
    "STRATEGIES",
    "Field",
    "c_header",
    "config_words",
    "frame_hash",
    "offset",
    "pktgen_frame",
]

CONFIG_MAGIC = 0xC0F16000
RESULTS_MAGIC = 0x5E5017ED
#: No planted fault (``fault_zero_length_frame``).
NO_FAULT = 0xFFFFFFFF
#: Entries of the RX sink's log and of pktgen's TX log (frames beyond them are counted,
#: not logged).
RX_LOG_ENTRIES = 1024
TX_LOG_ENTRIES = 1024

#: ``mode``: what the firmware runs.
MODES = {"tx_pktgen": 1, "rx_sink": 2}
#: ``strategy``: how completions reach the driver, by the driver model's IrqStrategy names
#: in their order; the C driver has every one but DIM (net_dim is the model's alone).
STRATEGIES = {
    name.value: number
    for number, name in enumerate(IrqStrategyName)
    if name is not IrqStrategyName.DIM
}
#: What the bench drives on FIRMWARE_PORT COMMAND: the RX sink stops on ``stop``.
COMMANDS = {"run": 0, "stop": 1}
#: The firmware's exit codes (FIRMWARE_PORT EXIT).
EXIT_CODES = {
    "ok": 0,
    "bad_config": 1,
    "exception": 2,
    "reset_timeout": 3,
    "no_soc": 4,
}


@dataclass(frozen=True)
class Field:
    name: str
    doc: str


CONFIG_FIELDS = (
    Field("magic", "CONFIG_MAGIC: the bench wrote this block"),
    Field("mode", "MODES"),
    Field("frames", "TX: frames to send; RX: frames expected (the sink also stops on COMMAND)"),
    Field("frame_bytes", "TX: frame length without FCS, 60..1514"),
    Field("extra_frags", "TX: fragments beyond the first per frame, 0..16"),
    Field("strategy", "STRATEGIES"),
    Field("coalesce_frames", "IRQ_*_COALESCE.frames (coalesce, napi)"),
    Field("coalesce_us", "IRQ_*_COALESCE.timer_us (coalesce, napi)"),
    Field("poll_us", "polling: µs between polls (the machine timer)"),
    Field("budget", "NAPI and polling budget, packets"),
    Field("tx_clean_budget", "packets per TX clean from the ISR; 0: all"),
    Field("burst_beats", "*_BURST_BEATS"),
    Field("prefetch", "*_PREFETCH"),
    Field("tx_ring", "TX descriptors, 2..4096"),
    Field("rx_ring", "RX descriptors, 2..4096"),
    Field("rx_buf_bytes", "RX buffer bytes, a multiple of 32, 64..16384"),
    Field("sys_clk_mhz", "IRQ_SYS_CLK_MHZ"),
    Field("dma_base", "host memory the driver may use: bus address of its first byte"),
    Field("dma_bytes", "... and its size"),
    Field("rx_record", "1: the RX sink hashes every frame into fw_rx_log"),
    Field("fault_zero_length_frame", "TX frame posted with a zero-length SOP; NO_FAULT: none"),
)

#: What a field of ``fw_config`` holds unless the bench says otherwise.
CONFIG_DEFAULTS = {
    "magic": CONFIG_MAGIC,
    "mode": MODES["tx_pktgen"],
    "frames": 16,
    "frame_bytes": 1514,
    "extra_frags": 0,
    "strategy": STRATEGIES["eop"],
    "coalesce_frames": 1,
    "coalesce_us": 0,
    "poll_us": 50,
    "budget": 64,
    "tx_clean_budget": 0,
    "burst_beats": 16,
    "prefetch": 4,
    "tx_ring": 64,
    "rx_ring": 64,
    "rx_buf_bytes": 2048,
    "sys_clk_mhz": 100,
    "dma_base": 0x1000,
    "dma_bytes": 0,  # the bench fills in its host memory's size
    "rx_record": 1,
    "fault_zero_length_frame": NO_FAULT,
}


def config_words(**values: int) -> list[int]:
    """The ``fw_config`` block's words: :data:`CONFIG_DEFAULTS` updated with ``values``
    (named as the fields; an unknown name or a value outside 32 bits is refused)."""
    unknown = set(values) - {field.name for field in CONFIG_FIELDS}
    if unknown:
        raise ValueError(
            f"no fw_config field {', '.join(sorted(unknown))}; fields: "
            f"{', '.join(field.name for field in CONFIG_FIELDS)}"
        )
    merged = {**CONFIG_DEFAULTS, **values}
    for name, value in merged.items():
        if not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
            raise ValueError(f"fw_config.{name} must be a 32-bit unsigned integer, not {value!r}")
    return [merged[field.name] for field in CONFIG_FIELDS]


RESULT_FIELDS = (
    Field("magic", "RESULTS_MAGIC once the run finished"),
    Field("cycles_lo", "mcycle from open to the end of the run, low word"),
    Field("cycles_hi", "... high word"),
    Field("irq_cycles", "mcycle spent in the trap handler (ISR, NAPI, timer), low 32 bits"),
    Field("xmit_cycles", "mcycle spent in xmit, low 32 bits"),
    Field("instret_lo", "instructions retired over the run, low word"),
    Field("irqs", "external (SoC) interrupts taken"),
    Field("timer_irqs", "machine timer interrupts taken"),
    Field("polls", "NAPI polls and polling passes"),
    Field("tx_packets", "frames reaped by TX clean"),
    Field("tx_bytes", "their bytes"),
    Field("tx_dropped", "frames dropped by a TX recovery"),
    Field("tx_reset_discards", "TX_RESET_DISCARDS at the end: reaped, flushed unsent"),
    Field("queue_stops", "netif_stop_queue"),
    Field("rx_packets", "good frames delivered"),
    Field("rx_bytes", "their bytes"),
    Field("rx_errors", "bad frames delivered"),
    Field("rx_dropped", "frames dropped by the driver (cut by a recovery)"),
    Field("rx_dropped_hw", "RX_DROPS + RX_FIFO_OVERFLOWS at the end"),
    Field("dma_errors", "channel halts handled"),
    Field("last_error_channel", "0: TX, 1: RX, of the last halt"),
    Field("last_error_code", "its STATUS.error_code"),
    Field("cfg_errors", "IRQ_STATUS.cfg_error seen"),
    Field("rx_logged", "entries written to fw_rx_log"),
    Field("mcause", "the unexpected trap's mcause (exit code exception)"),
    Field("mepc", "... its mepc"),
    Field("mtval", "... its mtval"),
    Field("start_cycle_lo", "mcycle (from the core's reset) when the run started, low word"),
    Field("rx_fifo_overflows", "RX_FIFO_OVERFLOWS at the end (also in rx_dropped_hw)"),
)

RX_LOG_FIELDS = (
    Field("length", "frame length (no FCS)"),
    Field("cycle", "mcycle when the sink got it, low word"),
    Field("hash", "frame_hash of its bytes"),
    Field("status", "bit 0: delivered ok; bits 8..: buffers it spanned"),
    Field("word3", "the frame's bytes 12..15 (a 32-bit word, little-endian): where a"),
    Field("word4", "... bench's sequence number may be (with bytes 16..19)"),
)


def frame_hash(data: bytes) -> int:
    """The RX sink's hash of a frame (FNV-1a over little-endian 32-bit words, the last
    one zero-padded), which the firmware computes word-wise as it consumes the frame."""
    value = 0x811C9DC5
    padded = bytes(data) + bytes(-len(data) % 4)
    for offset in range(0, len(padded), 4):
        value ^= int.from_bytes(padded[offset : offset + 4], "little")
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


#: The pktgen frame's addresses and EtherType (IEEE 802 local experimental 1).
PKTGEN_DST = bytes.fromhex("020000000002")
PKTGEN_SRC = bytes.fromhex("020000000001")
PKTGEN_ETHERTYPE = 0x88B5
#: Byte offset of the frame's sequence number (32 bits, little-endian).
PKTGEN_SEQ_OFFSET = 16


def pktgen_frame(seq: int, frame_bytes: int) -> bytes:
    """Frame ``seq`` of the firmware's TX loop (main.c's ``pktgen_template`` and
    ``pktgen_xmit`` build the same bytes): the addresses, the EtherType, then byte ``j``
    = ``(7 * j + 0x5A) & 0xFF``, with ``seq`` at :data:`PKTGEN_SEQ_OFFSET`."""
    frame = bytearray((7 * j + 0x5A) & 0xFF for j in range(frame_bytes))
    frame[0:14] = PKTGEN_DST + PKTGEN_SRC + PKTGEN_ETHERTYPE.to_bytes(2, "big")
    frame[PKTGEN_SEQ_OFFSET : PKTGEN_SEQ_OFFSET + 4] = (seq & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(frame)


def _struct(name: str, fields: tuple[Field, ...]) -> str:
    lines = [f"struct {name} {{"]
    for field in fields:
        lines.append(f"    uint32_t {field.name}; /* {field.doc} */")
    lines.append("};")
    return "\n".join(lines)


def c_header() -> str:
    """``fw_abi.h``: the structs and constants above, for the firmware."""
    defines = [
        f"#define FW_CONFIG_MAGIC 0x{CONFIG_MAGIC:08X}u",
        f"#define FW_RESULTS_MAGIC 0x{RESULTS_MAGIC:08X}u",
        f"#define FW_NO_FAULT 0x{NO_FAULT:08X}u",
        f"#define FW_RX_LOG_ENTRIES {RX_LOG_ENTRIES}u",
        f"#define FW_TX_LOG_ENTRIES {TX_LOG_ENTRIES}u",
        f"#define FW_PKTGEN_SEQ_OFFSET {PKTGEN_SEQ_OFFSET}u",
        f"#define FW_PKTGEN_ETHERTYPE 0x{PKTGEN_ETHERTYPE:04X}u",
        "#define FW_PKTGEN_DST {" + ", ".join(f"0x{b:02X}" for b in PKTGEN_DST) + "}",
        "#define FW_PKTGEN_SRC {" + ", ".join(f"0x{b:02X}" for b in PKTGEN_SRC) + "}",
    ]
    tables = (
        (MODES, "FW_MODE"),
        (STRATEGIES, "FW_STRATEGY"),
        (EXIT_CODES, "FW_EXIT"),
        (COMMANDS, "FW_COMMAND"),
    )
    for table, prefix in tables:
        for name, value in table.items():
            defines.append(f"#define {prefix}_{name.upper().replace('-', '_')} {value}u")
    return "\n".join(
        [
            "/* The bench <-> firmware blocks. GENERATED by macdma.firmware.c.build from",
            " * firmware/c/abi.py; do not edit. */",
            "#ifndef FW_ABI_H",
            "#define FW_ABI_H",
            "#include <stdint.h>",
            "",
            *defines,
            "",
            _struct("fw_config", CONFIG_FIELDS),
            "",
            _struct("fw_results", RESULT_FIELDS),
            "",
            _struct("fw_rx_log_entry", RX_LOG_FIELDS),
            "",
            "#endif /* FW_ABI_H */",
            "",
        ]
    )


def offset(fields: tuple[Field, ...], name: str) -> int:
    """Byte offset of field ``name`` in a block of ``fields``."""
    for index, field in enumerate(fields):
        if field.name == name:
            return 4 * index
    raise KeyError(f"no field {name!r}; fields: {', '.join(f.name for f in fields)}")
