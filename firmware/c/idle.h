/* Idle time for the bench: the cycles since the last mark, less the trap handler's.
 *
 * The cycle counter and the trap handler's total are read as one consistent pair: a trap
 * taken between the two reads would otherwise be subtracted from a span that does not
 * contain it (the difference wraps to ~2^32). The pair is re-read until the handler's
 * total did not move across it, as a seqlock reader does. Plain C with the counters
 * passed in, so a host test can place a trap between any two reads. */
#ifndef IDLE_H
#define IDLE_H

#include <stdint.h>

struct idle_mark {
    uint64_t cycles;
    uint32_t irq_cycles;
};

static inline struct idle_mark idle_sample(const volatile uint32_t *irq_cycles,
                                           uint64_t (*cycles)(void))
{
    struct idle_mark mark;
    do {
        mark.irq_cycles = *irq_cycles;
        mark.cycles = cycles();
    } while (mark.irq_cycles != *irq_cycles);
    return mark;
}

/* The idle cycles since *mark, which moves to now. */
static inline uint32_t idle_since(struct idle_mark *mark, const volatile uint32_t *irq_cycles,
                                  uint64_t (*cycles)(void))
{
    struct idle_mark now = idle_sample(irq_cycles, cycles);
    uint32_t idle = (uint32_t)(now.cycles - mark->cycles) - (now.irq_cycles - mark->irq_cycles);
    *mark = now;
    return idle;
}

#endif
