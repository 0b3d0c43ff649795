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
extern volatile uint32_t app_irq_cycles;

#endif /* APP_H */
