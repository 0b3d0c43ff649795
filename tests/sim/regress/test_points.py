"""The points of a sweep on disk (sim/regress/points.py): finished points skipped, failed ones
and all under --force rerun, a skipped point given every current metric, a half-written JSON
rerun."""

from __future__ import annotations

import json

from synthetic import sweep_data, synthetic_metrics

from macdma.sim import regress
from macdma.sim.regress import (
    expand,
    parse_sweep,
    plan,
    store,
    summarise,
)


def test_plan_skips_finished_points_reruns_failed_ones_and_force_reruns_all(tmp_path):
    points = expand(parse_sweep(sweep_data()), "src")
    first, second = points[0], points[1]
    store(tmp_path, first, {"status": "ok", "metrics": synthetic_metrics(first.scenario, 9)}, "src")
    store(tmp_path, second, {"status": "failed", "error": "frame 3 damaged"}, "src")
    todo, done = plan(points, tmp_path)
    assert set(done) == {first.key}
    assert [p.key for p in todo] == [p.key for p in points[1:]]
    todo, done = plan(points, tmp_path, force=True)
    assert not done and len(todo) == len(points)


def test_a_skipped_point_gets_every_current_metric_from_its_stored_metrics(tmp_path):
    (point, *_) = expand(parse_sweep(sweep_data()), "src")
    metrics = synthetic_metrics(point.scenario, 9)
    store(tmp_path, point, {"status": "ok", "metrics": metrics}, "src")
    path = regress.point_path(tmp_path, point.key)
    old = json.loads(path.read_text())
    del old["summary"]["cpu_pct"]  # written before the metric existed
    path.write_text(json.dumps(old))
    _, done = plan([point], tmp_path)
    assert done[point.key]["summary"] == summarise(metrics)


def test_a_half_written_json_is_rerun(tmp_path):
    points = expand(parse_sweep(sweep_data()), "src")
    path = regress.point_path(tmp_path, points[0].key)
    path.parent.mkdir(parents=True)
    path.write_text('{"status": "o')
    todo, _ = plan(points, tmp_path)
    assert points[0] in todo
