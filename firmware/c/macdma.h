/* macdma: a bare-metal driver for the MAC + scatter-gather DMA, on the generated register
 * map (macdma_regs.h) and descriptor layout (macdma_desc.h).
 *
 * It implements the algorithms of the driver model (firmware/driver.py), in the same
 * words: ndo_open, ndo_start_xmit with fragments, TX clean with a budget (e1000's
 * next_to_watch), a NAPI-style RX poll that chains buffers from SOP to EOP and refills,
 * the ISR (ack, errors, clean or schedule NAPI), the polling timer, and the recovery of a
 * halted channel (reset, reap what completed, drop the rest, restart). One core: the ISR,
 * the NAPI poll and the polling timer run in the trap handler, xmit in the application
 * with interrupts disabled around the ring (local_irq_save).
 *
 * Memory: descriptor rings through the uncached alias of host memory (what
 * dma_alloc_coherent gives a non-coherent SoC); buffers through the cached window, and
 * the data cache is invalidated once per RX poll before the first buffer it reads. */
#ifndef MACDMA_H
#define MACDMA_H

#include <stdint.h>

/* The largest TX ring the driver's bookkeeping holds (the hardware takes 4096). */
#define MACDMA_MAX_TX_RING 1024u
/* The largest frame the RX path assembles (a 9,216-byte jumbo plus slack). */
#define MACDMA_MAX_FRAME_BYTES 9248u
/* Worst-case descriptors per frame: MAX_SKB_FRAGS (16) + the linear part. */
#define MACDMA_MAX_FRAGS 17u

enum macdma_strategy {
    MACDMA_PER_DESC = 0, /* IRQ_MODE PER_DESC, IOC on every descriptor; the ISR cleans */
    MACDMA_EOP = 1,      /* IRQ_MODE EOP; the ISR cleans */
    MACDMA_COALESCE = 2, /* IRQ_MODE COALESCE (frames, timer); the ISR cleans */
    MACDMA_POLLING = 3,  /* no done interrupts: the machine timer polls every poll_us */
    MACDMA_NAPI = 4,     /* the ISR masks and schedules; the poll unmasks below budget */
};

struct macdma_config {
    uint32_t tx_ring, rx_ring, rx_buf_bytes;
    uint32_t burst_beats, prefetch, dma_poll_us;
    enum macdma_strategy strategy;
    uint32_t coalesce_frames, coalesce_us;
    uint32_t poll_us;         /* polling: timer period */
    uint32_t budget;          /* NAPI / polling budget, packets */
    uint32_t tx_clean_budget; /* packets per TX clean from the ISR; 0: all */
    uint32_t max_frags;       /* the queue stops when fewer descriptors are free */
    uint32_t wake_threshold;  /* free descriptors that wake it */
    uint32_t sys_clk_mhz;
    uint32_t dma_base, dma_bytes; /* host memory the driver allocates from */
};

struct macdma_frag {
    uint32_t dma; /* bus address */
    uint32_t len; /* bytes, >= 1 */
};

struct macdma_stats {
    uint32_t irqs, timer_irqs, timer_overruns, polls;
    uint32_t tx_packets, tx_bytes, tx_dropped, queue_stops, queue_wakes;
    uint32_t rx_packets, rx_bytes, rx_errors, rx_dropped;
    uint32_t dma_errors, cfg_errors, last_error_channel, last_error_code;
};

/* Per-slot TX bookkeeping (struct e1000_tx_buffer): set on a frame's first slot. */
struct macdma_tx_buffer {
    uint16_t eop_index;
    uint16_t descriptors;
    uint32_t frame_bytes;
};

struct macdma_ring {
    volatile uint32_t *desc; /* uncached CPU view */
    uint32_t dma;            /* bus address */
    uint32_t size;
    uint32_t next_to_use, next_to_clean;
};

/* A received frame handed to the stack: the words of the frame (copied out of the DMA
 * buffers), its length, whether it is good, and how many buffers it spanned. */
typedef void (*macdma_receive_fn)(const uint32_t *frame, uint32_t length, int ok,
                                  uint32_t buffers);

struct macdma_dev {
    struct macdma_config cfg;
    struct macdma_ring tx, rx;
    uint32_t rx_buf_dma; /* slot i's buffer: rx_buf_dma + i * rx_buf_bytes */
    uint32_t dma_next;   /* the DMA memory allocator's next free byte */
    volatile uint32_t queue_stopped;
    volatile uint32_t napi_scheduled;
    uint32_t is_open;
    uint32_t timer_period; /* polling: system clocks between polls */
    uint64_t timer_deadline;
    /* The RX frame being assembled (an skb's linear data). */
    uint32_t partial_open, partial_len, partial_buffers, partial_bad;
    macdma_receive_fn on_receive;
    /* A planted fault: the SOP descriptor of the frame xmit is called for when this
     * counter reaches 0 is posted with length 0 (the hardware halts TX); ~0: none. */
    uint32_t fault_zero_length_in;
    struct macdma_stats stats;
};

/* Returns of macdma_xmit (NETDEV_TX_OK / NETDEV_TX_BUSY) and a refusal. */
#define MACDMA_TX_OK 0
#define MACDMA_TX_BUSY 1
#define MACDMA_TX_INVALID (-1)

uint32_t macdma_dma_alloc(struct macdma_dev *dev, uint32_t bytes, uint32_t align);
int macdma_open(struct macdma_dev *dev, const struct macdma_config *cfg);
int macdma_tx_drain(struct macdma_dev *dev);
void macdma_close(struct macdma_dev *dev);
int macdma_xmit(struct macdma_dev *dev, const struct macdma_frag *frags, uint32_t count);
uint32_t macdma_tx_clean(struct macdma_dev *dev, uint32_t budget);
uint32_t macdma_tx_in_flight(const struct macdma_dev *dev);
uint32_t macdma_rx_poll(struct macdma_dev *dev, uint32_t budget);
void macdma_isr(struct macdma_dev *dev);
uint32_t macdma_napi_poll(struct macdma_dev *dev, uint32_t budget);
void macdma_timer(struct macdma_dev *dev);
uint32_t macdma_hw_rx_dropped(void);
uint32_t macdma_hw_tx_reset_discards(void);
uint32_t macdma_hw_rx_fifo_overflows(void);

#endif /* MACDMA_H */
