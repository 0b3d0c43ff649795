"""``macdma compare`` as a CI gate (sim/regress/results_db.py, issue 42): a run that lost points
fails and names them, and floating-point noise below what the table prints is no change.
Synthetic points, no simulator."""

from __future__ import annotations

import json

from synthetic import synthetic_metrics

from macdma.sim import regress
from macdma.sim.cli import main
from macdma.sim.regress import point_key, store, write_csv
from macdma.sim.regress.results_db import compare, load_folder
from macdma.sim.run.scenario import Scenario

MISSING = "missing"  # the status compare gives a point the later run lacks
RATES = [100.0 + 5 * n for n in range(8)]


def write_run(folder, frame_sizes) -> list[dict]:
    """A regress output folder with one TX point per frame size."""
    results = []
    for size, mbps in zip(frame_sizes, RATES, strict=False):
        s = Scenario(direction="tx", frames=8, frame_size=size, cpu="microblaze-66")
        point = regress.Point(point_key(s, "src"), s, ["e"])
        result = {"status": "ok", "metrics": synthetic_metrics(s, mbps)}
        results.append(store(folder, point, result, "src"))
    write_csv(folder / "results.csv", results)
    return results


SIZES = [64, 128, 256, 512, 768, 1024, 1280, 1500]


def test_a_run_that_lacks_points_fails_and_names_each_of_them(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    write_run(a, SIZES)
    write_run(b, SIZES[:1])  # B ran 1 of A's 8 points
    code = main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    printed = capsys.readouterr().out
    assert code == 1, printed
    assert "No point moved" not in printed
    assert "7 points of before missing after" in printed
    for size in SIZES[1:]:
        assert f"frame_size={size} " in printed, f"frame size {size} not named:\n{printed}"
    missing = [line for line in printed.splitlines() if f"| ok | {MISSING} |" in line]
    assert len(missing) == 7, printed
    table = (tmp_path / "cmp" / "compare.csv").read_text()
    assert table.count(f",status,ok,{MISSING},") == 7


def test_points_only_in_the_later_run_are_new_not_a_failure(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    write_run(a, SIZES[:2])
    write_run(b, SIZES)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    assert "6 points only after" in capsys.readouterr().out


def test_floating_point_noise_below_the_printed_resolution_is_not_a_change(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_run(a, SIZES[:2])
    write_run(b, SIZES[:2])
    key = point_key(Scenario(direction="tx", frames=8, frame_size=64, cpu="microblaze-66"), "src")
    stored = {}
    for folder, ci in ((a, 1.7e-13), (b, 0.0)):  # a zero ± that summed to noise in one run
        path = folder / "points" / f"{key}.json"
        stored = json.loads(path.read_text())
        stored["summary"]["throughput_ci_mbps"] = ci
        path.write_text(json.dumps(stored))
    assert compare(load_folder(a), load_folder(b), tolerance=0.0).changes == []
    # A change the table shows is still reported, even at a tiny relative size.
    path = b / "points" / f"{key}.json"
    stored["summary"]["throughput_ci_mbps"] = 0.01
    path.write_text(json.dumps(stored))
    changes = compare(load_folder(a), load_folder(b), tolerance=0.0).changes
    assert [(c.metric, c.before, c.after) for c in changes] == [
        ("throughput_ci_mbps", 1.7e-13, 0.01)
    ]


def test_a_stored_point_without_its_scenario_is_a_message_not_a_traceback(tmp_path, capsys):
    # issue 42 §10: a point JSON with empty metrics gave `KeyError: 'scenario'`
    a, b = tmp_path / "a", tmp_path / "b"
    write_run(a, SIZES[:2])
    stored = write_run(b, SIZES[:2])
    (b / "points" / f"{stored[0]['key']}.json").write_text("{}")
    code = main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "is not a stored point (no key or scenario in it)" in err
    assert "Traceback" not in err
