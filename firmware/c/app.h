/* The application side of the firmware (main.c): the device, the bench's blocks, and
 * the trap handler's cycle count. */
#ifndef APP_H
#define APP_H

#include <stdint.h>

#include "fw_abi.h"
#include "macdma.h"

extern struct macdma_dev app_dev;
extern volatile struct fw_config fw_config;
extern struct fw_results fw_results;
/* Live counters the bench samples while the run goes on (abi.py): cycles in the trap
 * handler, cycles the application spent idle (spinning on a stopped queue, waiting for
 * frames) less the traps taken meanwhile, and the traps by cause. */
extern volatile uint32_t app_irq_cycles;
extern volatile uint32_t app_idle_cycles;
extern volatile uint32_t app_ext_irqs;
extern volatile uint32_t app_timer_irqs;

#endif /* APP_H */
