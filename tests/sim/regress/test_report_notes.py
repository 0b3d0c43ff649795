"""The regression report read by a newcomer (issue 42): every marker a table cell carries is
explained under that table (report.md and report.html), plots carry the tables' ± as error
bars with room above the highest point and labels inside the figure, the HTML shows each
plot at its natural size, a failed point's reason reaches the terminal and the report on
one line (a reason all points share, once), and the screenshot command writes a
non-blank picture of the current report.

The points are recorded: tests/data/quick-points/ holds the 8 point JSONs of one
``macdma regress --quick`` on Verilator (commit 503978a), so these tests need no
simulator; tests/sim/regress/test_report_html.py renders a freshly simulated report."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.container import ErrorbarContainer
from PIL import Image

from macdma.sim.regress import QUICK_SWEEP, check_results, load_sweep, ok, write_report
from macdma.sim.regress.command import _finish
from macdma.sim.regress.plots import HEADROOM, build_figure
from macdma.sim.regress.screenshot import chromium, screenshot

POINTS = Path(__file__).parents[2] / "data" / "quick-points"
SWEEP = load_sweep(QUICK_SWEEP)
# Each marker a table cell may carry, and how the note that explains it starts.
MARKERS = {"(short window)": "(short window): ", "†": "† RX above 100% of line rate: "}
ICARUS_MISSING = (
    "Icarus Verilog is not installed (iverilog not found on PATH)\n"
    "install it: sim/system-deps.sh sim | or set SIM=verilator"
)


def recorded() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(POINTS.glob("*.json"))]


def sections(markdown: str) -> dict[str, str]:
    """report.md's "## " sections by title."""
    parts = re.split(r"^## (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def write(out: Path, results: list[dict]) -> str:
    write_report(out / "report.md", SWEEP, results, check_results(SWEEP, results), {})
    return (out / "report.md").read_text()


def test_every_marker_in_a_table_is_explained_under_it(tmp_path):
    report = sections(write(tmp_path, recorded()))
    found = set()
    for experiment in SWEEP.experiments:
        text = report[experiment.title]
        table = "\n".join(table_lines(text))
        after = text.split(table_lines(text)[-1], 1)[1]
        for marker, note in MARKERS.items():
            if marker in table:
                found.add(marker)
                assert f"\n{note}" in after, f"{experiment.name}: {marker} not explained"
            else:
                assert note not in after, f"{experiment.name}: a note with no {marker} cell"
    assert found == set(MARKERS), "the recorded quick sweep shows both markers"
    ideal = report[SWEEP.experiments[0].title]
    # The note explains the recorded numbers: 100.30% over the 60-byte point's window.
    assert "frame_size=60: 100.30% of a 29.1 µs window is 87 ns worth of frames" in ideal
    assert "deliveries trail the wire by 550 ns (median) to 728 ns" in ideal
    short = report["MicroBlaze, 5 extra fragments, per IRQ strategy"]
    assert "17 frames in the window (want >= 20 per direction)" in short


def test_the_html_report_explains_the_same_markers_and_shows_plots_at_natural_size(tmp_path):
    results = recorded()
    plots = {}
    for experiment in SWEEP.experiments:
        figure = build_figure(
            experiment, ok(r for r in results if experiment.name in r["experiments"])
        )
        figure.savefig(tmp_path / f"{experiment.name}.png", dpi=100)
        plt.close(figure)
        plots[experiment.name] = f"{experiment.name}.png"
    write_report(tmp_path / "report.md", SWEEP, results, check_results(SWEEP, results), plots)
    page = (tmp_path / "report.html").read_text()
    for marker, note in MARKERS.items():
        assert marker in page and f'<p class="note">{note}' in page.replace("&#x27;", "'")
    images = re.findall(
        r'<img src="data:image/png;base64,[^"]+" width="(\d+)" height="(\d+)"', page
    )
    for (width, height), name in zip(images, plots.values(), strict=True):
        with Image.open(tmp_path / name) as png:
            assert png.size == (int(width), int(height))
    assert "max-width: 100%" not in page  # nothing shrinks a figure to the text's width

    # Rendered: each image as wide as its PNG.
    probe = tmp_path / "probe.html"
    probe.write_text(
        page.replace(
            "</body>",
            '<script>window.addEventListener("load", function () { var p = '
            'document.createElement("pre"); p.id = "sizes"; p.textContent = JSON.stringify('
            "Array.prototype.map.call(document.images, function (i) { return [i.width, "
            "i.naturalWidth]; })); document.body.appendChild(p); });</script></body>",
        )
    )
    dom = chromium("--virtual-time-budget=5000", "--dump-dom", probe.as_uri(), profile=tmp_path)
    sizes = json.loads(re.search(r'<pre id="sizes">(.*?)</pre>', dom, re.S).group(1))
    assert len(sizes) == len(plots) and all(shown == natural > 0 for shown, natural in sizes), sizes


@pytest.mark.parametrize("experiment", SWEEP.experiments, ids=lambda e: e.name)
def test_plots_have_the_tables_error_bars_headroom_and_labels_inside(experiment, request):
    rows = ok(r for r in recorded() if experiment.name in r["experiments"])
    figure = build_figure(experiment, rows)
    request.addfinalizer(lambda: plt.close(figure))
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    frame = figure.bbox
    for axis, metric in zip(figure.axes, experiment.metrics, strict=True):
        values = [r["summary"][metric] for r in rows]
        errors = [r["summary"]["throughput_ci_mbps"] for r in rows]
        if metric == "throughput_mbps":  # the one metric the tables show with a ±
            shown = sorted(
                round(float(segment[1][1] - segment[0][1]) / 2, 6)
                for bars in axis.containers
                if isinstance(bars, ErrorbarContainer)
                for segment in bars.lines[2][0].get_segments()
            )
            assert shown == sorted(round(e, 6) for e in errors), (shown, errors)
            highest = max(v + e for v, e in zip(values, errors, strict=True))
        else:
            highest = max(values)
        top = axis.get_ylim()[1]
        assert top >= highest * (1 + HEADROOM) - 1e-9, f"{metric}: a point on the frame"
        for text in (axis.title, axis.xaxis.label, axis.yaxis.label, *axis.get_yticklabels()):
            if text.get_text():
                box = text.get_window_extent(renderer)
                inside = box.x0 >= frame.x0 and box.x1 <= frame.x1
                assert inside and box.y0 >= frame.y0 and box.y1 <= frame.y1, (
                    f"{metric}: {text.get_text()!r} runs off the figure"
                )
        # The y label no taller than its panel (it would run into the title), the panel's
        # title clear of the figure's.
        label, panel = axis.yaxis.label.get_window_extent(renderer), axis.get_window_extent()
        assert label.y0 >= panel.y0 and label.y1 <= panel.y1, f"{metric}: y label too long"
        title = axis.title.get_window_extent(renderer)
        assert not title.overlaps(figure._suptitle.get_window_extent(renderer)), metric


def failed(results: list[dict], reason: str, keys: set[str] | None = None) -> list[dict]:
    """``results`` with the points of ``keys`` (default all) failed for ``reason``."""
    out = []
    for r in copy.deepcopy(results):
        if keys is None or r["key"] in keys:
            r = {k: v for k, v in r.items() if k not in ("metrics", "summary")}
            r.update(status="failed", error=reason)
        out.append(r)
    return out


def test_one_reason_for_every_point_is_stated_once_in_the_terminal_and_report(tmp_path, capsys):
    results = failed(recorded(), ICARUS_MISSING)
    assert _finish(SWEEP, results, tmp_path, len(results), 1.0, False) == 1
    printed = capsys.readouterr().out
    one_line = "Icarus Verilog is not installed (iverilog not found on PATH) / install it: "
    assert printed.count("Icarus Verilog is not installed") == 2, printed  # check + failures
    assert f"all 8 points: {one_line}" in printed
    report = (tmp_path / "report.md").read_text()
    assert report.count("Icarus Verilog is not installed") == 2, report  # assertion + section
    assert f"- all 8 points: {one_line}" in sections(report)["Failed points"]
    html = (tmp_path / "report.html").read_text()
    assert "<h2>Failed points</h2>" in html and "all 8 points: Icarus" in html


def test_a_multi_line_reason_stays_one_row_and_each_point_keeps_its_own(tmp_path, capsys):
    points = recorded()
    first, second = points[0]["key"], points[1]["key"]
    results = failed(points, "frame 3 damaged\n  at byte 17 | expected 0x2a", {first})
    results = failed(results, "timed out after 52 s", {second})
    assert _finish(SWEEP, results, tmp_path, len(results), 1.0, False) == 1
    printed = capsys.readouterr().out
    assert f"point {first}: frame 3 damaged / at byte 17 | expected 0x2a" in printed
    assert f"point {second}: timed out after 52 s" in printed
    report = (tmp_path / "report.md").read_text()
    for name, text in sections(report).items():
        lines = table_lines(text)
        cells = {line.count(" | ") for line in lines}
        assert len(cells) <= 1, f"{name}: a row broke:\n" + "\n".join(lines)
    assert "at byte 17" in sections(report)["Assertions"]
    assert f"- point {first}: frame 3 damaged / at byte 17 | expected 0x2a" in report


def test_the_screenshot_command_writes_a_picture_of_the_current_report(tmp_path):
    results = recorded()
    write(tmp_path, results)
    shot = screenshot(tmp_path / "report.html", tmp_path / "shot.png", 800, 900)
    with Image.open(shot) as png:
        image = png.convert("L")
    assert image.size == (800, 900)
    dark = sum(image.histogram()[:200])  # pixels clearly darker than the white page
    assert dark > 0.01 * 800 * 900, f"{dark} dark pixels: a blank page?"
    # The shot is of this report: a page without its tables has far fewer dark pixels.
    (tmp_path / "empty.html").write_text("<html><body><h1>macdma</h1></body></html>")
    with Image.open(screenshot(tmp_path / "empty.html", tmp_path / "e.png", 800, 900)) as empty:
        assert dark > 3 * sum(empty.convert("L").histogram()[:200])


def test_a_failed_simulation_keeps_its_one_line_summary_as_the_reason(tmp_path, monkeypatch):
    from macdma.sim.cosim.runner import CocotbTestFailure
    from macdma.sim.regress.failures import failure_lines
    from macdma.sim.regress.pool import run_point
    from macdma.sim.run import scenario as scenario_module

    def failing(scenario):
        raise CocotbTestFailure(
            "macdma_soc: 1 of 1 tests failed\nTraceback (most recent call last):\n  File x\n"
            "AssertionError: RX frame 3 damaged (60 bytes)",
            summary="macdma_soc: run_scenario failed: RX frame 3 damaged (60 bytes)",
        )

    monkeypatch.setattr(scenario_module, "run_scenario", failing)
    # A NAPI point: the recorded eop/per-desc points set coalescing, which a scenario now
    # refuses where it has no effect (knobs.check_needs).
    point = next(p for p in recorded() if p["scenario"]["irq"] == "napi")
    result = run_point(json.dumps(point["scenario"]), str(tmp_path / "point.log"))
    assert result["status"] == "failed" and "Traceback" in result["error"]
    shown = failure_lines([{**point, **result}])
    assert shown == [
        f"point {point['key']}: macdma_soc: run_scenario failed: RX frame 3 damaged (60 bytes)"
    ]
