/* The trap handler: the SoC's interrupt (the driver's ISR, then NAPI as irq_exit runs the
 * pending softirq), the machine timer (the driver's polling timer), and anything else,
 * an exception, which ends the run with its cause in the results. The cycles spent here
 * are counted for the bench (fw_results.irq_cycles). */
#include <stdint.h>

#include "app.h"
#include "cpu.h"
#include "fw_abi.h"
#include "macdma.h"

void trap_handler(void);

void trap_handler(void)
{
    uint64_t entered = cpu_cycles();
    uint32_t cause = csr_read(mcause);
    if (cause == (MCAUSE_INTERRUPT | MCAUSE_MACHINE_EXTERNAL)) {
        app_ext_irqs++;
        if (csr_read(0xFC0) & (1u << CPU_EXTERNAL_IRQ_SOC)) {
            macdma_isr(&app_dev);
            while (app_dev.napi_scheduled)
                macdma_napi_poll(&app_dev, app_dev.cfg.budget);
        }
    } else if (cause == (MCAUSE_INTERRUPT | MCAUSE_MACHINE_TIMER)) {
        app_timer_irqs++;
        macdma_timer(&app_dev);
    } else {
        fw_results.mcause = cause;
        fw_results.mepc = csr_read(mepc);
        fw_results.mtval = csr_read(mtval);
        firmware_exit(FW_EXIT_EXCEPTION);
    }
    app_irq_cycles += (uint32_t)(cpu_cycles() - entered);
}

void console_puts(const char *text)
{
    while (*text)
        console_putc(*text++);
}

void firmware_exit(uint32_t code)
{
    mmio_write(CPU_FIRMWARE_PORT_BASE + CPU_FIRMWARE_PORT_EXIT, code);
    for (;;)
        ;
}
