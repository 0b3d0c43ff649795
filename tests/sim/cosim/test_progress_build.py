"""A model build says what it is doing (issue 42 §1): the first ``macdma run`` built the
Verilator model for minutes with nothing on screen after ``log: ...``. Now the build is
announced with the time it should take, then shown as it goes (a spinner on a terminal,
a line every half minute otherwise), and ends with the time it took; a cached model is
not announced."""

from __future__ import annotations

import io
import time

from runner_smoke import TOP, SmokeCounter

from macdma.sim.cosim import progress, runner
from macdma.sim.cosim.progress import RunProgress, about_text, showing_build
from macdma.sim.cosim.runner import announcing_builds, build_model


def test_a_build_is_announced_with_its_estimate_then_ticks_then_its_time(monkeypatch):
    monkeypatch.setattr(progress, "BUILD_NOTE_SECONDS", 0.05)
    stream = io.StringIO()
    with showing_build("verilator", "macdma_soc", 130.0, False, stream=stream, live=False):
        time.sleep(0.2)
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        "building the simulation model (first time, about 2 minutes): macdma_soc on verilator"
    )
    assert len([line for line in lines if line.startswith("  still building: ")]) >= 2, lines
    assert lines[-1] == "model built in 0s"


def test_a_stopped_build_says_so():
    stream = io.StringIO()
    try:
        with showing_build("icarus", "t", 5.0, True, stream=stream, live=False):
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("building the simulation model (the design changed since the")
    assert lines[-1] == "model stopped in 0s"


def test_estimates_read_as_a_person_says_them():
    assert about_text(4.0) == "about 10 seconds"
    assert about_text(44.0) == "about 40 seconds"
    assert about_text(130.0) == "about 2 minutes"
    assert about_text(200.0) == "about 3 minutes"


def test_only_a_build_that_is_not_cached_is_announced_on_the_runs_display(tmp_path, monkeypatch):
    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path))
    stream = io.StringIO()
    with RunProgress(stream) as display, announcing_builds(display.building):
        first = build_model("icarus", TOP, factory=SmokeCounter)
        again = build_model("icarus", TOP, factory=SmokeCounter)
    assert not first.cached and again.cached
    lines = stream.getvalue().splitlines()
    estimate = about_text(runner.DEFAULT_BUILD_SECONDS["icarus"])
    assert lines[0] == (
        f"building the simulation model (first time, {estimate}): {TOP} on icarus"
    ), lines
    assert lines[-1].startswith("model built in ") and len(lines) == 2, lines
    # the next build of that top is estimated from this one's recorded time
    assert runner.estimate_build_seconds("icarus", TOP) == (first.recorded_seconds, True)


def test_regress_builds_each_model_once_before_its_pool_and_shows_it(tmp_path, monkeypatch, capsys):
    # Left to the pool's workers, one built in silence while the others waited on its lock.
    from macdma.sim.regress.pool import build_models
    from macdma.sim.run.scenario import Scenario, scenario_top

    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path / "build"))
    scenarios = [Scenario(sim="icarus", frames=8), Scenario(sim="icarus", frames=9)]
    top, _ = scenario_top(scenarios[0])
    build_models(scenarios, tmp_path / "logs")
    err = capsys.readouterr().err
    assert err.count("building the simulation model (first time") == 1, err
    assert f"{top} on icarus" in err and "model built in " in err
    assert (tmp_path / "logs" / f"build-icarus-{top}.log").is_file()  # the compiler's output
    build_models(scenarios, tmp_path / "logs")
    assert "building" not in capsys.readouterr().err  # cached: nothing to show
