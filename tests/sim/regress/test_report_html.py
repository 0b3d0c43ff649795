"""``report.html`` (sim/regress/report_html.py): rendered in headless Chromium from a real
``--quick`` sweep (plots loaded, tables and their rows, a sort, a non-blank screenshot),
and its escaping and baseline section on synthetic results."""

from __future__ import annotations

import json
import re

from PIL import Image

from macdma.sim.regress import QUICK_SWEEP, expand, load_sweep
from macdma.sim.regress.report_html import BASELINE_MARKER, add_comparison, write_html_report
from macdma.sim.regress.results_db import Change, Comparison
from macdma.sim.regress.screenshot import chromium

# Run once the page has loaded (data: images decoded): the checks' results go into the DOM
# as JSON, which --dump-dom prints.
CHECK_SCRIPT = """
<script>
window.addEventListener("load", function () {
  var images = Array.prototype.map.call(document.images, function (img) {
    return {alt: img.alt, width: img.naturalWidth};
  });
  var tables = {};
  document.querySelectorAll("table[data-table]").forEach(function (t) {
    tables[t.dataset.table] = t.tBodies[0].rows.length;
  });
  var point = document.querySelector('table[data-table="fragments_irq"] th:first-child');
  point.click();
  var sorted = Array.prototype.map.call(
    point.closest("table").tBodies[0].rows, function (r) { return r.cells[0].textContent; });
  var out = document.createElement("pre");
  out.id = "checks";
  out.textContent = JSON.stringify({images: images, tables: tables, sorted: sorted});
  document.body.appendChild(out);
});
</script>
"""


def test_quick_report_renders_in_chromium(quick_regress, tmp_path):
    assert quick_regress.done.returncode == 0, quick_regress.done.stderr[-3000:]
    sweep = load_sweep(QUICK_SWEEP)
    page = (quick_regress.out / "report.html").read_text()
    assert "http://" not in page and "https://" not in page  # self-contained: no network
    checked = tmp_path / "checked.html"
    checked.write_text(page.replace("</body>", CHECK_SCRIPT + "</body>"))

    dom = chromium("--virtual-time-budget=5000", "--dump-dom", checked.as_uri(), profile=tmp_path)
    found = re.search(r'<pre id="checks">(.*?)</pre>', dom, re.S)
    assert found, "the check script did not run: " + dom[-2000:]
    checks = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))

    assert len(checks["images"]) == len(sweep.experiments)
    assert all(image["width"] > 0 for image in checks["images"]), checks["images"]
    points = expand(sweep, "src")
    checks_count = 1 + sum(len(e.expectations) for e in sweep.experiments)
    conditions = sum(len(e.conditions) for e in sweep.experiments)
    expected = {"assertions": checks_count, "parameters": 8, "field_reports": conditions}
    for experiment in sweep.experiments:
        expected[experiment.name] = sum(experiment.name in p.experiments for p in points)
    assert checks["tables"] == expected
    assert checks["sorted"] == sorted(checks["sorted"]) and len(checks["sorted"]) == 4
    assert dom.count('class="PASS"') == checks_count == 5 and 'class="FAIL"' not in dom

    shot = tmp_path / "report.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,2000", checked.as_uri(), profile=tmp_path)
    image = Image.open(shot).convert("L")
    dark = sum(image.histogram()[:200])  # pixels clearly darker than the white page
    assert image.size == (1280, 2000)
    assert dark > 0.01 * image.size[0] * image.size[1], f"{dark} dark pixels: a blank page?"


def test_text_is_escaped_and_the_baseline_section_filled(tmp_path):
    sweep = load_sweep(QUICK_SWEEP)
    sweep = type(sweep)(
        name="<b>evil</b>", description="a & b", defaults={}, experiments=(), path=None
    )
    check = type("Check", (), {"status": "PASS", "statement": "x < y", "detail": "<script>"})
    path = tmp_path / "report.html"
    write_html_report(path, sweep, [], [check], {})
    page = path.read_text()
    assert "&lt;b&gt;evil&lt;/b&gt;" in page and "<b>evil" not in page
    assert "a &amp; b" in page and "&lt;script&gt;" in page and BASELINE_MARKER in page

    change = Change("id", "irq=<napi>", "throughput_mbps", 100.0, 80.0, 0.2)
    add_comparison(path, Comparison("old", "new", 0.05, compared=3, changes=[change]))
    page = path.read_text()
    assert "Changed since the baseline" in page and BASELINE_MARKER not in page
    assert "irq=&lt;napi&gt;" in page and "-20.0%" in page
