"""The bare-metal C driver for the soft core of ``macdma_soc_cpu`` (hdl/cpu/), and its
build step (:mod:`macdma.firmware.c.build`)."""
