"""The modelled CPU's kernel-like scheduler and the ordered, timed CPU write path
(tests/cocotb/cpu_sched_tb.py)."""


def test_cpu_scheduler_and_write_path(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="cpu_sched_tb", sim=sim)
    assert (result.failed, result.passed) == (0, 6)
