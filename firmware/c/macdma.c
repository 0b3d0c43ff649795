/* macdma: the bare-metal driver (macdma.h says what and how). Function by function it
 * follows firmware/driver.py: open, xmit, tx_clean, rx_poll, isr, napi_poll, the polling
 * timer, and the recovery paths. */
#include "macdma.h"

#include "cpu.h"
#include "fw_abi.h"
#include "macdma_desc.h"
#include "macdma_regs.h"

#define DONE_CAUSES (MACDMA_IRQ_STATUS_TX_DONE_MASK | MACDMA_IRQ_STATUS_RX_DONE_MASK)
#define ERROR_CAUSES                                                                  \
    (MACDMA_IRQ_STATUS_TX_ERROR_MASK | MACDMA_IRQ_STATUS_RX_ERROR_MASK |              \
     MACDMA_IRQ_STATUS_CFG_ERROR_MASK)
#define ALL_CAUSES (DONE_CAUSES | ERROR_CAUSES)
/* STATUS while a CTRL.reset is still winding down (same bits on both channels). */
#define RESET_BUSY_MASK (MACDMA_TX_STATUS_HALTED_MASK | MACDMA_TX_STATUS_RESETTING_MASK)
#define RESET_POLL_LIMIT 10000u
#define RX_BAD_MASK                                                                   \
    (MACDMA_DESC_ERROR_MASK | MACDMA_DESC_RX_ERROR_MASK | MACDMA_DESC_RX_TRUNCATED_MASK)

_Static_assert(MACDMA_RX_STATUS_HALTED_MASK == MACDMA_TX_STATUS_HALTED_MASK, "halted bit");
_Static_assert(MACDMA_RX_STATUS_RESETTING_MASK == MACDMA_TX_STATUS_RESETTING_MASK, "bit");
_Static_assert(MACDMA_DESC_OWN_WORD == 3 && MACDMA_DESC_LENGTH_WORD == 3, "word 3");
_Static_assert(MACDMA_DESC_DONE_LENGTH_WORD == 1 && MACDMA_DESC_FRAME_LENGTH_WORD == 2, "");

/* One DMA channel's registers (driver.py's _ChannelRegs). */
struct channel_regs {
    uint32_t ctrl, status, ring_base, ring_size, tail, burst_beats, prefetch, poll_us;
    uint32_t run, reset, error_code_mask, error_code_shift;
};

static const struct channel_regs TX_REGS = {
    MACDMA_TX_CTRL, MACDMA_TX_STATUS, MACDMA_TX_RING_BASE, MACDMA_TX_RING_SIZE,
    MACDMA_TX_TAIL, MACDMA_TX_BURST_BEATS, MACDMA_TX_PREFETCH, MACDMA_TX_POLL_US,
    MACDMA_TX_CTRL_RUN_MASK, MACDMA_TX_CTRL_RESET_MASK, MACDMA_TX_STATUS_ERROR_CODE_MASK,
    MACDMA_TX_STATUS_ERROR_CODE_SHIFT,
};
static const struct channel_regs RX_REGS = {
    MACDMA_RX_CTRL, MACDMA_RX_STATUS, MACDMA_RX_RING_BASE, MACDMA_RX_RING_SIZE,
    MACDMA_RX_TAIL, MACDMA_RX_BURST_BEATS, MACDMA_RX_PREFETCH, MACDMA_RX_POLL_US,
    MACDMA_RX_CTRL_RUN_MASK, MACDMA_RX_CTRL_RESET_MASK, MACDMA_RX_STATUS_ERROR_CODE_MASK,
    MACDMA_RX_STATUS_ERROR_CODE_SHIFT,
};

static __noinit struct macdma_tx_buffer tx_buffers[MACDMA_MAX_TX_RING];
/* The frame being assembled from RX buffers, word-aligned, with room for one more word. */
static __noinit uint32_t rx_frame[MACDMA_MAX_FRAME_BYTES / 4 + 1];

static inline uint32_t reg_read(uint32_t offset) { return mmio_read(CPU_CSR_BASE + offset); }
static inline void reg_write(uint32_t offset, uint32_t value)
{
    mmio_write(CPU_CSR_BASE + offset, value);
}

/* -- rings ------------------------------------------------------------------------- */

static inline uint32_t ring_next(const struct macdma_ring *ring, uint32_t index)
{
    return index + 1 < ring->size ? index + 1 : 0;
}

/* Free descriptors (E1000_DESC_UNUSED): one slot always stays empty. */
static inline uint32_t ring_unused(const struct macdma_ring *ring)
{
    int32_t free = (int32_t)ring->next_to_clean - (int32_t)ring->next_to_use - 1;
    return (uint32_t)(free < 0 ? free + (int32_t)ring->size : free);
}

static inline volatile uint32_t *ring_desc(const struct macdma_ring *ring, uint32_t index)
{
    return ring->desc + 4 * index;
}

/* Hand a descriptor to the DMA: words 0..2, then word 3 (own) last. Each store to the
 * uncached alias is acknowledged only once host memory took it, so the order holds. */
static void ring_post(struct macdma_ring *ring, uint32_t index, uint32_t addr, uint32_t word3)
{
    volatile uint32_t *desc = ring_desc(ring, index);
    desc[0] = addr;
    desc[1] = 0;
    desc[2] = 0;
    desc[3] = word3 | MACDMA_DESC_OWN_MASK;
}

static void ring_clear(struct macdma_ring *ring)
{
    for (uint32_t i = 0; i < 4 * ring->size; i++)
        ring->desc[i] = 0;
    ring->next_to_use = 0;
    ring->next_to_clean = 0;
}

uint32_t macdma_dma_alloc(struct macdma_dev *dev, uint32_t bytes, uint32_t align)
{
    uint32_t start = (dev->dma_next + align - 1) & ~(align - 1);
    if (start + bytes > dev->cfg.dma_base + dev->cfg.dma_bytes)
        return 0;
    dev->dma_next = start + bytes;
    return start;
}

static int wait_reset_done(const struct channel_regs *ch)
{
    for (uint32_t i = 0; i < RESET_POLL_LIMIT; i++)
        if (!(reg_read(ch->status) & RESET_BUSY_MASK))
            return 0;
    return -1;
}

static void channel_reset(const struct channel_regs *ch)
{
    reg_write(ch->ctrl, ch->reset);
    if (wait_reset_done(ch))
        firmware_exit(FW_EXIT_RESET_TIMEOUT);
}

/* -- ndo_open / ndo_stop ----------------------------------------------------------- */

static uint32_t irq_enable_mask(const struct macdma_dev *dev)
{
    return dev->cfg.strategy == MACDMA_POLLING ? ERROR_CAUSES : ALL_CAUSES;
}

static uint32_t irq_mode(enum macdma_strategy strategy, uint32_t frames, uint32_t us)
{
    switch (strategy) {
    case MACDMA_PER_DESC: return MACDMA_IRQ_MODE_PER_DESC;
    case MACDMA_EOP: return MACDMA_IRQ_MODE_EOP;
    case MACDMA_COALESCE: return MACDMA_IRQ_MODE_COALESCE;
    case MACDMA_POLLING: return MACDMA_IRQ_MODE_NONE;
    case MACDMA_NAPI:
        return frames > 1 || us > 0 ? MACDMA_IRQ_MODE_COALESCE : MACDMA_IRQ_MODE_EOP;
    }
    return MACDMA_IRQ_MODE_EOP;
}

static void rx_refill(struct macdma_dev *dev);

static void timer_arm(struct macdma_dev *dev, uint64_t deadline)
{
    dev->timer_deadline = deadline;
    /* Never a moment with a compare value below both halves' old and new values. */
    mmio_write(CPU_TIMER_BASE + CPU_TIMER_MTIMECMP_HI, 0xFFFFFFFFu);
    mmio_write(CPU_TIMER_BASE + CPU_TIMER_MTIMECMP_LO, (uint32_t)deadline);
    mmio_write(CPU_TIMER_BASE + CPU_TIMER_MTIMECMP_HI, (uint32_t)(deadline >> 32));
}

static uint64_t timer_now(void)
{
    uint32_t hi, lo;
    do {
        hi = mmio_read(CPU_TIMER_BASE + CPU_TIMER_MTIME_HI);
        lo = mmio_read(CPU_TIMER_BASE + CPU_TIMER_MTIME_LO);
    } while (hi != mmio_read(CPU_TIMER_BASE + CPU_TIMER_MTIME_HI));
    return ((uint64_t)hi << 32) | lo;
}

int macdma_open(struct macdma_dev *dev, const struct macdma_config *cfg)
{
    dev->cfg = *cfg;
    if (cfg->tx_ring < 2 || cfg->tx_ring > MACDMA_MAX_TX_RING || cfg->rx_ring < 2 ||
        cfg->rx_buf_bytes % 32 || cfg->max_frags < 1 || cfg->max_frags > cfg->tx_ring - 1)
        return -1;
    if (reg_read(MACDMA_ID) != MACDMA_ID_RESET_VALUE)
        return -2;
    /* Quiesce: both channels reset (HEAD = 0), no interrupt, stale causes acked. */
    reg_write(MACDMA_TX_CTRL, MACDMA_TX_CTRL_RESET_MASK);
    reg_write(MACDMA_RX_CTRL, MACDMA_RX_CTRL_RESET_MASK);
    if (wait_reset_done(&TX_REGS) || wait_reset_done(&RX_REGS))
        return -3;
    reg_write(MACDMA_IRQ_ENABLE, 0);
    reg_write(MACDMA_IRQ_STATUS, ALL_CAUSES);

    dev->dma_next = cfg->dma_base;
    dev->tx.size = cfg->tx_ring;
    dev->tx.dma = macdma_dma_alloc(dev, cfg->tx_ring * MACDMA_DESC_BYTES, 32);
    dev->rx.size = cfg->rx_ring;
    dev->rx.dma = macdma_dma_alloc(dev, cfg->rx_ring * MACDMA_DESC_BYTES, 32);
    dev->rx_buf_dma = macdma_dma_alloc(dev, cfg->rx_ring * cfg->rx_buf_bytes, 32);
    if (!dev->tx.dma || !dev->rx.dma || !dev->rx_buf_dma)
        return -4;
    dev->tx.desc = dma_to_uncached(dev->tx.dma);
    dev->rx.desc = dma_to_uncached(dev->rx.dma);
    ring_clear(&dev->tx);

    const struct channel_regs *channels[2] = {&TX_REGS, &RX_REGS};
    const struct macdma_ring *rings[2] = {&dev->tx, &dev->rx};
    for (int i = 0; i < 2; i++) {
        reg_write(channels[i]->ring_base, rings[i]->dma);
        reg_write(channels[i]->ring_size, rings[i]->size);
        reg_write(channels[i]->tail, 0);
        reg_write(channels[i]->burst_beats, cfg->burst_beats);
        reg_write(channels[i]->prefetch, cfg->prefetch);
        reg_write(channels[i]->poll_us, cfg->dma_poll_us);
    }
    uint32_t mode = irq_mode(cfg->strategy, cfg->coalesce_frames, cfg->coalesce_us);
    reg_write(MACDMA_IRQ_MODE, (mode << MACDMA_IRQ_MODE_TX_MODE_SHIFT) |
                                   (mode << MACDMA_IRQ_MODE_RX_MODE_SHIFT));
    uint32_t coalesce = (cfg->coalesce_frames << MACDMA_IRQ_TX_COALESCE_FRAMES_SHIFT) |
                        (cfg->coalesce_us << MACDMA_IRQ_TX_COALESCE_TIMER_US_SHIFT);
    reg_write(MACDMA_IRQ_TX_COALESCE, coalesce);
    reg_write(MACDMA_IRQ_RX_COALESCE, coalesce);
    reg_write(MACDMA_IRQ_SYS_CLK_MHZ, cfg->sys_clk_mhz);
    reg_write(MACDMA_IRQ_MIN_INTERVAL, 0);
    reg_write(MACDMA_MAC_CTRL, MACDMA_MAC_CTRL_TX_ENABLE_MASK | MACDMA_MAC_CTRL_RX_ENABLE_MASK);

    /* Post rx_ring - 1 empty buffers from slot 0 and ring the doorbell. */
    ring_clear(&dev->rx);
    dev->partial_open = 0;
    rx_refill(dev);
    dev->queue_stopped = 0;
    dev->napi_scheduled = 0;
    dev->is_open = 1;
    reg_write(MACDMA_IRQ_ENABLE, irq_enable_mask(dev));
    reg_write(MACDMA_TX_CTRL, MACDMA_TX_CTRL_RUN_MASK);
    reg_write(MACDMA_RX_CTRL, MACDMA_RX_CTRL_RUN_MASK);

    /* The SoC's line on the core, and the polling timer on absolute deadlines. */
    csr_set(0xBC0, 1u << CPU_EXTERNAL_IRQ_SOC);
    csr_set(mie, MIE_MEIE);
    if (cfg->strategy == MACDMA_POLLING) {
        dev->timer_period = cfg->poll_us * cfg->sys_clk_mhz;
        timer_arm(dev, timer_now() + dev->timer_period);
        csr_set(mie, MIE_MTIE);
    }
    return 0;
}

/* Wait until every frame TX clean reaped has left the MAC (sent, sent cut, or flushed by
 * a channel reset): the TX FIFO holds frames whose descriptors are already written back.
 * Returns 0, or -1 after RESET_POLL_LIMIT polls. */
int macdma_tx_drain(struct macdma_dev *dev)
{
    for (uint32_t i = 0; i < RESET_POLL_LIMIT; i++) {
        uint32_t left_mac = reg_read(MACDMA_STATS_TX_FRAMES_GOOD) +
                            reg_read(MACDMA_STATS_TX_FRAMES_BAD) +
                            reg_read(MACDMA_TX_RESET_DISCARDS);
        if (left_mac >= dev->stats.tx_packets)
            return 0;
    }
    return -1;
}

void macdma_close(struct macdma_dev *dev)
{
    dev->is_open = 0;
    csr_clear(mie, MIE_MTIE | MIE_MEIE);
    reg_write(MACDMA_IRQ_ENABLE, 0);
    reg_write(MACDMA_MAC_CTRL, 0);
    reg_write(MACDMA_TX_CTRL, 0);
    reg_write(MACDMA_RX_CTRL, 0);
}

uint32_t macdma_hw_rx_dropped(void)
{
    return reg_read(MACDMA_RX_DROPS) + reg_read(MACDMA_RX_FIFO_OVERFLOWS);
}

uint32_t macdma_hw_rx_fifo_overflows(void)
{
    return reg_read(MACDMA_RX_FIFO_OVERFLOWS);
}

uint32_t macdma_hw_tx_reset_discards(void)
{
    return reg_read(MACDMA_TX_RESET_DISCARDS);
}

/* -- TX: ndo_start_xmit ------------------------------------------------------------ */

static void stop_queue(struct macdma_dev *dev)
{
    if (!dev->queue_stopped) {
        dev->queue_stopped = 1; /* netif_stop_queue */
        dev->stats.queue_stops++;
    }
}

static void wake_queue(struct macdma_dev *dev)
{
    if (dev->queue_stopped) {
        dev->queue_stopped = 0; /* netif_wake_queue */
        dev->stats.queue_wakes++;
    }
}

int macdma_xmit(struct macdma_dev *dev, const struct macdma_frag *frags, uint32_t count)
{
    struct macdma_ring *tx = &dev->tx;
    if (count < 1 || count > tx->size - 1)
        return MACDMA_TX_INVALID;
    for (uint32_t n = 0; n < count; n++)
        if (frags[n].len < 1 || frags[n].len > 0xFFFFu)
            return MACDMA_TX_INVALID;
    if (dev->queue_stopped)
        return MACDMA_TX_BUSY; /* the stack requeues and waits for the wake */

    uint32_t flags = irq_save();
    if (ring_unused(tx) < count) {
        stop_queue(dev);
        irq_restore(flags);
        return MACDMA_TX_BUSY;
    }
    uint32_t planted = dev->fault_zero_length_in == 0;
    if (dev->fault_zero_length_in != 0xFFFFFFFFu)
        dev->fault_zero_length_in--;
    uint32_t ioc = dev->cfg.strategy == MACDMA_PER_DESC ? MACDMA_DESC_IOC_MASK : 0;
    uint32_t first = tx->next_to_use, index = first, last = first, bytes = 0;
    for (uint32_t n = 0; n < count; n++) {
        uint32_t word3 = (planted && n == 0 ? 0 : frags[n].len) | ioc;
        if (n == 0)
            word3 |= MACDMA_DESC_SOP_MASK;
        if (n == count - 1)
            word3 |= MACDMA_DESC_EOP_MASK;
        ring_post(tx, index, frags[n].dma, word3);
        bytes += frags[n].len;
        last = index;
        index = ring_next(tx, index);
    }
    tx_buffers[first].eop_index = (uint16_t)last;
    tx_buffers[first].descriptors = (uint16_t)count;
    tx_buffers[first].frame_bytes = bytes;
    tx->next_to_use = index;
    /* Every descriptor is in memory (acknowledged stores) before TAIL moves. */
    reg_write(MACDMA_TX_TAIL, tx->next_to_use);
    if (ring_unused(tx) < dev->cfg.max_frags)
        stop_queue(dev);
    irq_restore(flags);
    return MACDMA_TX_OK;
}

uint32_t macdma_tx_in_flight(const struct macdma_dev *dev)
{
    int32_t used = (int32_t)dev->tx.next_to_use - (int32_t)dev->tx.next_to_clean;
    return (uint32_t)(used < 0 ? used + (int32_t)dev->tx.size : used);
}

/* -- TX completion ------------------------------------------------------------------ */

uint32_t macdma_tx_clean(struct macdma_dev *dev, uint32_t budget)
{
    struct macdma_ring *tx = &dev->tx;
    uint32_t cleaned = 0;
    while (tx->next_to_clean != tx->next_to_use && (budget == 0 || cleaned < budget)) {
        struct macdma_tx_buffer *head = &tx_buffers[tx->next_to_clean];
        /* next_to_watch: the frame is done once its EOP is written back. */
        if (ring_desc(tx, head->eop_index)[3] & MACDMA_DESC_OWN_MASK)
            break;
        dev->stats.tx_packets++;
        dev->stats.tx_bytes += head->frame_bytes;
        tx->next_to_clean = ring_next(tx, head->eop_index);
        cleaned++;
    }
    /* Hysteresis: wake only with room for several worst-case frames. */
    if (dev->queue_stopped && ring_unused(tx) >= dev->cfg.wake_threshold)
        wake_queue(dev);
    return cleaned;
}

static void tx_drop_queued(struct macdma_dev *dev)
{
    struct macdma_ring *tx = &dev->tx;
    while (tx->next_to_clean != tx->next_to_use) {
        dev->stats.tx_dropped++;
        tx->next_to_clean = ring_next(tx, tx_buffers[tx->next_to_clean].eop_index);
    }
}

/* -- RX: the NAPI receive half ------------------------------------------------------ */

static void rx_refill(struct macdma_dev *dev)
{
    struct macdma_ring *rx = &dev->rx;
    uint32_t ioc = dev->cfg.strategy == MACDMA_PER_DESC ? MACDMA_DESC_IOC_MASK : 0;
    while (ring_unused(rx)) {
        uint32_t index = rx->next_to_use;
        ring_post(rx, index, dev->rx_buf_dma + index * dev->cfg.rx_buf_bytes,
                  dev->cfg.rx_buf_bytes | ioc);
        rx->next_to_use = ring_next(rx, index);
    }
    reg_write(MACDMA_RX_TAIL, rx->next_to_use);
}

/* Copy a buffer's bytes after the frame's so far, a word at a time (the frame's offset
 * stays word-aligned: every buffer but the last is full, and a multiple of 32 bytes). */
static void rx_copy(struct macdma_dev *dev, uint32_t index, uint32_t bytes)
{
    if (dev->partial_len + bytes > MACDMA_MAX_FRAME_BYTES) {
        dev->partial_bad = 1;
        return;
    }
    const uint32_t *from = dma_to_cached(dev->rx_buf_dma + index * dev->cfg.rx_buf_bytes);
    uint32_t *to = rx_frame + dev->partial_len / 4;
    for (uint32_t words = (bytes + 3) / 4; words; words--)
        *to++ = *from++;
    dev->partial_len += bytes;
}

static uint32_t rx_poll_locked(struct macdma_dev *dev, uint32_t budget, int refill)
{
    struct macdma_ring *rx = &dev->rx;
    uint32_t received = 0, reaped = 0, invalidated = 0;
    while (rx->next_to_clean != rx->next_to_use && (budget == 0 || received < budget)) {
        uint32_t index = rx->next_to_clean;
        volatile uint32_t *desc = ring_desc(rx, index);
        uint32_t word3 = desc[3];
        if (word3 & MACDMA_DESC_OWN_MASK)
            break; /* not written back yet (own is in word 3, written last) */
        uint32_t word1 = desc[1], word2 = desc[2];
        if (!invalidated) {
            /* dma_sync_single_for_cpu: stale lines of buffers this poll reads go; the
             * buffers are 32-byte aligned, so no line holds two. */
            dcache_invalidate();
            invalidated = 1;
        }
        rx->next_to_clean = ring_next(rx, index);
        reaped++;
        if ((word3 & MACDMA_DESC_SOP_MASK) || !dev->partial_open) {
            if (dev->partial_open)
                dev->stats.rx_dropped++; /* a SOP while a frame is open: its tail was lost */
            dev->partial_open = 1;
            dev->partial_len = 0;
            dev->partial_buffers = 0;
            dev->partial_bad = 0;
        }
        rx_copy(dev, index, (word1 & MACDMA_DESC_DONE_LENGTH_MASK) >> MACDMA_DESC_DONE_LENGTH_SHIFT);
        dev->partial_buffers++;
        if (!(word3 & MACDMA_DESC_EOP_MASK))
            continue;
        uint32_t frame_length =
            (word2 & MACDMA_DESC_FRAME_LENGTH_MASK) >> MACDMA_DESC_FRAME_LENGTH_SHIFT;
        int ok = !(word2 & RX_BAD_MASK) && !dev->partial_bad && frame_length == dev->partial_len;
        if (ok) {
            dev->stats.rx_packets++;
            dev->stats.rx_bytes += dev->partial_len;
        } else {
            dev->stats.rx_errors++;
        }
        dev->partial_open = 0;
        if (dev->on_receive)
            dev->on_receive(rx_frame, dev->partial_len, ok, dev->partial_buffers);
        received++;
    }
    if (refill && reaped)
        rx_refill(dev);
    return received;
}

uint32_t macdma_rx_poll(struct macdma_dev *dev, uint32_t budget)
{
    return rx_poll_locked(dev, budget, 1);
}

/* -- errors and recovery -------------------------------------------------------------- */

static void record_channel_error(struct macdma_dev *dev, const struct channel_regs *ch,
                                 uint32_t channel)
{
    uint32_t status = reg_read(ch->status);
    dev->stats.dma_errors++;
    dev->stats.last_error_channel = channel;
    dev->stats.last_error_code = (status & ch->error_code_mask) >> ch->error_code_shift;
}

/* TX halted: reset the channel (HEAD = 0), reap what completed, drop the rest, re-open
 * the ring from slot 0 (the tx_timeout / reset_task path). */
static void recover_tx(struct macdma_dev *dev)
{
    channel_reset(&TX_REGS);
    macdma_tx_clean(dev, 0);
    tx_drop_queued(dev);
    ring_clear(&dev->tx);
    reg_write(MACDMA_TX_TAIL, 0);
    reg_write(MACDMA_TX_CTRL, MACDMA_TX_CTRL_RUN_MASK);
    wake_queue(dev);
}

/* RX halted: deliver what completed before the halt, drop a frame cut short by it,
 * reset the channel and post the whole ring again. */
static void recover_rx(struct macdma_dev *dev)
{
    channel_reset(&RX_REGS);
    rx_poll_locked(dev, 0, 0);
    if (dev->partial_open)
        dev->stats.rx_dropped++;
    ring_clear(&dev->rx);
    dev->partial_open = 0;
    rx_refill(dev);
    reg_write(MACDMA_RX_CTRL, MACDMA_RX_CTRL_RUN_MASK);
}

static void handle_errors(struct macdma_dev *dev, uint32_t status)
{
    if (status & MACDMA_IRQ_STATUS_CFG_ERROR_MASK) {
        reg_write(MACDMA_ID_CFG_ERROR, reg_read(MACDMA_ID_CFG_ERROR));
        dev->stats.cfg_errors++;
    }
    if (status & MACDMA_IRQ_STATUS_TX_ERROR_MASK) {
        record_channel_error(dev, &TX_REGS, 0);
        recover_tx(dev);
    }
    if (status & MACDMA_IRQ_STATUS_RX_ERROR_MASK) {
        record_channel_error(dev, &RX_REGS, 1);
        recover_rx(dev);
    }
}

/* -- interrupts and NAPI ------------------------------------------------------------ */

void macdma_isr(struct macdma_dev *dev)
{
    dev->stats.irqs++;
    uint32_t status = reg_read(MACDMA_IRQ_STATUS) & ALL_CAUSES;
    if (!status)
        return; /* IRQ_NONE */
    /* Ack before cleaning: a completion after this point raises the cause again. */
    reg_write(MACDMA_IRQ_STATUS, status);
    if (status & ERROR_CAUSES)
        handle_errors(dev, status);
    if (!(status & DONE_CAUSES) || dev->cfg.strategy == MACDMA_POLLING)
        return;
    if (dev->cfg.strategy == MACDMA_NAPI) {
        if (!dev->napi_scheduled) {
            /* napi_schedule: mask the done causes; the poll unmasks them. */
            reg_write(MACDMA_IRQ_ENABLE, ERROR_CAUSES);
            dev->napi_scheduled = 1;
        }
        return;
    }
    if (status & MACDMA_IRQ_STATUS_TX_DONE_MASK)
        macdma_tx_clean(dev, dev->cfg.tx_clean_budget);
    if (status & MACDMA_IRQ_STATUS_RX_DONE_MASK)
        macdma_rx_poll(dev, 0);
}

uint32_t macdma_napi_poll(struct macdma_dev *dev, uint32_t budget)
{
    dev->stats.polls++;
    uint32_t tx_done = macdma_tx_clean(dev, budget);
    uint32_t work = macdma_rx_poll(dev, budget);
    if (tx_done >= budget)
        work = budget;
    if (work < budget && dev->napi_scheduled) {
        dev->napi_scheduled = 0; /* napi_complete_done: unmask; pending work fires at once */
        reg_write(MACDMA_IRQ_ENABLE, irq_enable_mask(dev));
    }
    return work;
}

/* The polling timer's expiry: on absolute deadlines (expiries that passed while the CPU
 * was busy are skipped and counted), clean TX and RX, again at once while a pass used its
 * whole budget. */
void macdma_timer(struct macdma_dev *dev)
{
    dev->stats.timer_irqs++;
    uint64_t deadline = dev->timer_deadline + dev->timer_period;
    uint64_t now = timer_now();
    while (deadline <= now) {
        deadline += dev->timer_period;
        dev->stats.timer_overruns++;
    }
    timer_arm(dev, deadline);
    if (!dev->is_open)
        return;
    uint32_t budget = dev->cfg.budget;
    for (;;) {
        dev->stats.polls++;
        uint32_t tx_done = macdma_tx_clean(dev, budget);
        uint32_t rx_done = macdma_rx_poll(dev, budget);
        if (tx_done < budget && rx_done < budget)
            break;
    }
}
