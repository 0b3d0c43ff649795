"""``macdma run`` and ``macdma bench``: the knobs, the scenario, its traffic and the cocotb
scenario bench."""
