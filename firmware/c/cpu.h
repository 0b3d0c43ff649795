/* The soft core (VexRiscv_Full, RV32IM) as the driver sees it: CSRs, interrupt control,
 * the data cache, MMIO and the firmware's bench port. */
#ifndef CPU_H
#define CPU_H

#include <stdint.h>

#include "soc_cpu_map.h"

/* Storage the start-up code leaves as it is (link.ld's .noinit): written before read. */
#define __noinit __attribute__((section(".noinit")))

#define csr_read(csr) ({ uint32_t v_; __asm__ volatile("csrr %0, " #csr : "=r"(v_)); v_; })
#define csr_write(csr, v) __asm__ volatile("csrw " #csr ", %0" ::"r"((uint32_t)(v)))
#define csr_set(csr, v) __asm__ volatile("csrs " #csr ", %0" ::"r"((uint32_t)(v)))
#define csr_clear(csr, v) __asm__ volatile("csrc " #csr ", %0" ::"r"((uint32_t)(v)))

#define MSTATUS_MIE (1u << 3)
#define MIE_MTIE (1u << 7)
#define MIE_MEIE (1u << 11)
#define MCAUSE_INTERRUPT (1u << 31)
#define MCAUSE_MACHINE_TIMER 7u
#define MCAUSE_MACHINE_EXTERNAL 11u
/* LiteX's interrupt lines on VexRiscv: mask and pending CSRs. */
#define CSR_IRQ_MASK 0xBC0
#define CSR_IRQ_PENDING 0xFC0

static inline uint64_t cpu_cycles(void)
{
    uint32_t hi, lo, again;
    do {
        hi = csr_read(mcycleh);
        lo = csr_read(mcycle);
        again = csr_read(mcycleh);
    } while (hi != again);
    return ((uint64_t)hi << 32) | lo;
}

/* local_irq_save / local_irq_restore: the driver's only lock on one core. */
static inline uint32_t irq_save(void)
{
    uint32_t status;
    __asm__ volatile("csrrc %0, mstatus, %1" : "=r"(status) : "r"(MSTATUS_MIE) : "memory");
    return status & MSTATUS_MIE;
}

static inline void irq_restore(uint32_t flags)
{
    if (flags)
        __asm__ volatile("csrs mstatus, %0" ::"r"(MSTATUS_MIE) : "memory");
}

/* VexRiscv's custom instruction: invalidate the whole data cache (write-through, so
 * nothing is lost), before reading what the DMA wrote to cached memory. */
static inline void dcache_invalidate(void)
{
    __asm__ volatile(".word 0x500F" ::: "memory");
}

static inline uint32_t mmio_read(uint32_t address)
{
    return *(volatile uint32_t *)address;
}

static inline void mmio_write(uint32_t address, uint32_t value)
{
    *(volatile uint32_t *)address = value;
}

/* Host memory: the DMA's bus address is the cached CPU address (HOST_MEMORY at 0);
 * the uncached alias HOST_MEMORY_IO is for what the driver keeps coherent. */
static inline void *dma_to_cached(uint32_t dma) { return (void *)(CPU_HOST_MEMORY_BASE + dma); }
static inline volatile uint32_t *dma_to_uncached(uint32_t dma)
{
    return (volatile uint32_t *)(CPU_HOST_MEMORY_IO_BASE + dma);
}

static inline void console_putc(char c)
{
    mmio_write(CPU_FIRMWARE_PORT_BASE + CPU_FIRMWARE_PORT_CONSOLE, (uint8_t)c);
}

void console_puts(const char *text);
void firmware_exit(uint32_t code) __attribute__((noreturn));

#endif /* CPU_H */
