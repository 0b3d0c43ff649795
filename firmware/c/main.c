/* The firmware's application: a pktgen-like TX loop or an RX sink on the macdma driver,
 * configured by the bench (fw_config) and reporting to it (fw_results, fw_rx_log).
 *
 * pktgen: a pool of min(tx_ring, frames) frame buffers in host memory, each filled once
 * with the frame template (the frame a buffer holds is never in flight when it is reused:
 * at most tx_ring - 1 descriptors are); per frame, one store of its sequence number, xmit
 * with 1 + extra_frags fragments of the buffer, spinning while the queue is stopped
 * (pktgen spins too). Both print "ready" once set up, and measure from there. RX sink: every frame the driver delivers is consumed (its words
 * hashed when asked); the sink ends after `frames` frames or on the bench's COMMAND stop.
 */
#include <stdint.h>

#include "app.h"
#include "cpu.h"
#include "fw_abi.h"
#include "idle.h"
#include "macdma.h"

struct macdma_dev app_dev;
/* In .data, not .bss: the bench writes it before the core leaves reset. */
__attribute__((section(".data.fw_config"))) volatile struct fw_config fw_config;
struct fw_results fw_results;
__noinit struct fw_rx_log_entry fw_rx_log[FW_RX_LOG_ENTRIES];
__noinit uint32_t fw_tx_log[FW_TX_LOG_ENTRIES];
volatile uint32_t app_irq_cycles;
volatile uint32_t app_idle_cycles;
volatile uint32_t app_ext_irqs;
volatile uint32_t app_timer_irqs;
static uint32_t app_xmit_cycles;

#define barrier() __asm__ volatile("" ::: "memory")

static inline uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

static void idle_begin(struct idle_mark *mark) { *mark = idle_sample(&app_irq_cycles, cpu_cycles); }

static void idle_account(struct idle_mark *mark)
{
    app_idle_cycles += idle_since(mark, &app_irq_cycles, cpu_cycles);
}

/* -- RX sink ------------------------------------------------------------------------ */

static void sink_receive(const uint32_t *frame, uint32_t length, int ok, uint32_t buffers)
{
    uint32_t hash = 0;
    if (fw_config.rx_record) {
        /* FNV-1a over the frame's words (abi.frame_hash), the last one zero-padded. */
        uint32_t words = length / 4;
        hash = 0x811C9DC5u;
        for (uint32_t i = 0; i < words; i++)
            hash = (hash ^ frame[i]) * 0x01000193u;
        if (length % 4)
            hash = (hash ^ (frame[words] & ((1u << (8 * (length % 4))) - 1))) * 0x01000193u;
    }
    uint32_t n = fw_results.rx_logged;
    if (n < FW_RX_LOG_ENTRIES) {
        fw_rx_log[n].length = length;
        fw_rx_log[n].cycle = csr_read(mcycle);
        fw_rx_log[n].hash = hash;
        fw_rx_log[n].status = (ok ? 1u : 0u) | (buffers << 8);
        fw_rx_log[n].word3 = length >= 16 ? frame[3] : 0;
        fw_rx_log[n].word4 = length >= 20 ? frame[4] : 0;
        fw_results.rx_logged = n + 1;
    }
}

static void rx_sink(void)
{
    struct idle_mark mark;
    idle_begin(&mark);
    for (;;) {
        idle_account(&mark);
        barrier(); /* the ISR moves the counts */
        if (app_dev.stats.rx_packets + app_dev.stats.rx_errors >= fw_config.frames)
            break;
        if (mmio_read(CPU_FIRMWARE_PORT_BASE + CPU_FIRMWARE_PORT_COMMAND) == FW_COMMAND_STOP)
            break;
    }
}

/* -- pktgen ------------------------------------------------------------------------- */

/* The frame template, built once a byte at a time (abi.pktgen_frame), then copied a
 * word at a time into each pool buffer. */
static __noinit uint32_t pktgen_template[MACDMA_MAX_FRAME_BYTES / 4];
static uint32_t pktgen_pool_dma, pktgen_stride, pktgen_pool;

static void pktgen_build_template(uint32_t frame_bytes)
{
    static const uint8_t dst[6] = FW_PKTGEN_DST, src[6] = FW_PKTGEN_SRC;
    uint8_t *bytes = (uint8_t *)pktgen_template;
    for (uint32_t j = 0; j < frame_bytes; j++)
        bytes[j] = (uint8_t)(7 * j + 0x5A);
    for (uint32_t j = 0; j < 6; j++) {
        bytes[j] = dst[j];
        bytes[6 + j] = src[j];
    }
    bytes[12] = FW_PKTGEN_ETHERTYPE >> 8;
    bytes[13] = FW_PKTGEN_ETHERTYPE & 0xFF;
}

/* A pool of frame buffers, each holding the template. A frame is reused only after it
 * left the ring: at most tx_ring - 1 descriptors (so frames) are in flight. */
static void pktgen_setup(void)
{
    uint32_t frame_bytes = fw_config.frame_bytes;
    pktgen_stride = (frame_bytes + 31) & ~31u;
    pktgen_pool = min_u32(app_dev.cfg.tx_ring, fw_config.frames);
    pktgen_pool_dma = macdma_dma_alloc(&app_dev, pktgen_pool * pktgen_stride, 32);
    if (!pktgen_pool_dma || frame_bytes > MACDMA_MAX_FRAME_BYTES)
        firmware_exit(FW_EXIT_BAD_CONFIG);
    pktgen_build_template(frame_bytes);
    for (uint32_t i = 0; i < pktgen_pool; i++) {
        uint32_t *to = dma_to_cached(pktgen_pool_dma + i * pktgen_stride);
        for (uint32_t w = 0; w < (frame_bytes + 3) / 4; w++)
            to[w] = pktgen_template[w];
    }
}

static void pktgen(void)
{
    uint32_t frame_bytes = fw_config.frame_bytes;
    uint32_t count = 1 + fw_config.extra_frags;
    struct macdma_frag frags[MACDMA_MAX_FRAGS];
    uint32_t piece = frame_bytes / count;
    for (uint32_t seq = 0; seq < fw_config.frames; seq++) {
        uint32_t dma = pktgen_pool_dma + (seq % pktgen_pool) * pktgen_stride;
        *(volatile uint32_t *)((uint8_t *)dma_to_cached(dma) + FW_PKTGEN_SEQ_OFFSET) = seq;
        for (uint32_t k = 0; k < count; k++) {
            frags[k].dma = dma + k * piece;
            frags[k].len = k == count - 1 ? frame_bytes - k * piece : piece;
        }
        if (seq < FW_TX_LOG_ENTRIES)
            fw_tx_log[seq] = csr_read(mcycle);
        for (;;) {
            uint64_t started = cpu_cycles();
            int rc = macdma_xmit(&app_dev, frags, count);
            app_xmit_cycles += (uint32_t)(cpu_cycles() - started);
            if (rc == MACDMA_TX_OK)
                break;
            if (rc == MACDMA_TX_INVALID)
                firmware_exit(FW_EXIT_BAD_CONFIG);
            /* NETDEV_TX_BUSY: pktgen spins until the queue wakes (idle time). */
            struct idle_mark mark;
            idle_begin(&mark);
            while (app_dev.queue_stopped)
                idle_account(&mark);
            idle_account(&mark);
        }
    }
    /* Every frame reaped (or dropped by a recovery): waiting is idle time. */
    struct idle_mark mark;
    idle_begin(&mark);
    for (;;) {
        idle_account(&mark);
        barrier(); /* the ISR moves the ring */
        if (macdma_tx_in_flight(&app_dev) == 0)
            break;
    }
}

/* -- main ----------------------------------------------------------------------------- */

static int configure(struct macdma_config *cfg)
{
    if (fw_config.magic != FW_CONFIG_MAGIC)
        return -1;
    if (fw_config.mode != FW_MODE_TX_PKTGEN && fw_config.mode != FW_MODE_RX_SINK)
        return -1;
    if (fw_config.strategy > FW_STRATEGY_NAPI || fw_config.extra_frags > MACDMA_MAX_FRAGS - 1)
        return -1;
    if (fw_config.tx_ring < 2 || fw_config.budget < 1)
        return -1;
    cfg->tx_ring = fw_config.tx_ring;
    cfg->rx_ring = fw_config.rx_ring;
    cfg->rx_buf_bytes = fw_config.rx_buf_bytes;
    cfg->burst_beats = fw_config.burst_beats;
    cfg->prefetch = fw_config.prefetch;
    cfg->dma_poll_us = 0;
    cfg->strategy = (enum macdma_strategy)fw_config.strategy;
    cfg->coalesce_frames = fw_config.coalesce_frames;
    cfg->coalesce_us = fw_config.coalesce_us;
    cfg->poll_us = fw_config.poll_us;
    cfg->budget = fw_config.budget;
    cfg->tx_clean_budget = fw_config.tx_clean_budget;
    cfg->max_frags = min_u32(MACDMA_MAX_FRAGS, cfg->tx_ring - 1);
    cfg->wake_threshold = min_u32(2 * cfg->max_frags, cfg->tx_ring - 1);
    cfg->sys_clk_mhz = fw_config.sys_clk_mhz;
    cfg->dma_base = fw_config.dma_base;
    cfg->dma_bytes = fw_config.dma_bytes;
    return 0;
}

_Static_assert(MACDMA_PER_DESC == FW_STRATEGY_PER_DESC && MACDMA_EOP == FW_STRATEGY_EOP &&
                   MACDMA_COALESCE == FW_STRATEGY_COALESCE &&
                   MACDMA_POLLING == FW_STRATEGY_POLLING && MACDMA_NAPI == FW_STRATEGY_NAPI,
               "the driver's strategies are the bench's");

int main(void)
{
    struct macdma_config cfg;
    if (mmio_read(CPU_FIRMWARE_PORT_BASE + CPU_FIRMWARE_PORT_ALIVE) !=
        CPU_FIRMWARE_PORT_ALIVE_VALUE)
        return FW_EXIT_BAD_CONFIG;
    if (configure(&cfg))
        return FW_EXIT_BAD_CONFIG;
    app_dev.on_receive = sink_receive;
    app_dev.fault_zero_length_in = fw_config.fault_zero_length_frame;
    int rc = macdma_open(&app_dev, &cfg);
    if (rc == -2)
        return FW_EXIT_NO_SOC;
    if (rc)
        return FW_EXIT_BAD_CONFIG;

    if (fw_config.mode == FW_MODE_TX_PKTGEN)
        pktgen_setup();
    /* The banner the bench waits for before it sends (cpu_soc.py, READY_BANNER). */
    console_puts("ready\n");
    uint64_t started = cpu_cycles();
    uint32_t instret = csr_read(minstret);
    fw_results.start_cycle_lo = (uint32_t)started;
    csr_set(mstatus, MSTATUS_MIE);
    if (fw_config.mode == FW_MODE_TX_PKTGEN)
        pktgen();
    else
        rx_sink();
    uint64_t cycles = cpu_cycles() - started;
    irq_save();

    struct macdma_stats *stats = &app_dev.stats;
    fw_results.cycles_lo = (uint32_t)cycles;
    fw_results.cycles_hi = (uint32_t)(cycles >> 32);
    fw_results.irq_cycles = app_irq_cycles;
    fw_results.xmit_cycles = app_xmit_cycles;
    fw_results.instret_lo = csr_read(minstret) - instret;
    fw_results.irqs = stats->irqs;
    fw_results.timer_irqs = stats->timer_irqs;
    fw_results.polls = stats->polls;
    fw_results.tx_packets = stats->tx_packets;
    fw_results.tx_bytes = stats->tx_bytes;
    fw_results.tx_dropped = stats->tx_dropped;
    fw_results.tx_reset_discards = macdma_hw_tx_reset_discards();
    fw_results.queue_stops = stats->queue_stops;
    fw_results.rx_packets = stats->rx_packets;
    fw_results.rx_bytes = stats->rx_bytes;
    fw_results.rx_errors = stats->rx_errors;
    fw_results.rx_dropped = stats->rx_dropped;
    fw_results.rx_dropped_hw = macdma_hw_rx_dropped();
    fw_results.rx_fifo_overflows = macdma_hw_rx_fifo_overflows();
    fw_results.dma_errors = stats->dma_errors;
    fw_results.last_error_channel = stats->last_error_channel;
    fw_results.last_error_code = stats->last_error_code;
    fw_results.cfg_errors = stats->cfg_errors;
    /* ndo_stop once the wire has everything TX clean reaped (not measured). */
    if (macdma_tx_drain(&app_dev))
        return FW_EXIT_RESET_TIMEOUT;
    macdma_close(&app_dev);
    fw_results.magic = FW_RESULTS_MAGIC;
    return FW_EXIT_OK;
}
