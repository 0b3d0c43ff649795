"""A screenshot of a ``report.html`` by headless Chromium: how docs/report-screenshot.png
is made (``make screenshot`` runs the quick sweep, then this on its report).

    python -m macdma.sim.regress.screenshot REPORT_HTML PNG [--width W] [--height H]

Chromium runs with no network and a throw-away profile; the page is self-contained
(report_html.py), so what it shows is exactly what the tool wrote.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The size of docs/report-screenshot.png: the page's top (title, field reports,
#: assertions, the first experiment's plot at its natural size).
WIDTH, HEIGHT = 1280, 1600
CHROMIUM_TIMEOUT_S = 120


class ChromiumError(RuntimeError):
    """Chromium is missing or failed; the message says which."""


def chromium(*args: str, profile: Path) -> str:
    """Run headless Chromium (no network, the profile folder ``profile``) with ``args``
    and return its stdout."""
    binary = shutil.which("chromium")
    if binary is None:
        raise ChromiumError("chromium is not installed: run sim/system-deps.sh chromium")
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    if done.returncode != 0:
        raise ChromiumError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def screenshot(html: Path, png: Path, width: int = WIDTH, height: int = HEIGHT) -> Path:
    """Render ``html`` in a ``width`` x ``height`` window and write the view to ``png``."""
    html = Path(html).resolve()
    if not html.is_file():
        raise ChromiumError(f"{html}: no such report (run macdma regress first)")
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="macdma-chromium-") as profile:
        chromium(
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=5000",  # the data: images decoded before the shot
            html.as_uri(),
            profile=Path(profile),
        )
    if not png.is_file():
        raise ChromiumError(f"chromium wrote no screenshot at {png}")
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m macdma.sim.regress.screenshot",
        description="Screenshot a macdma regress report.html with headless Chromium.",
    )
    parser.add_argument("report", type=Path, help="the report.html to render")
    parser.add_argument("png", type=Path, help="the PNG to write")
    parser.add_argument("--width", type=int, default=WIDTH, help=f"pixels (default {WIDTH})")
    parser.add_argument("--height", type=int, default=HEIGHT, help=f"pixels (default {HEIGHT})")
    args = parser.parse_args(argv)
    try:
        written = screenshot(args.report, args.png, args.width, args.height)
    except (ChromiumError, subprocess.TimeoutExpired) as error:
        print(f"screenshot: {error}", file=sys.stderr)
        return 1
    print(f"screenshot of {args.report}: {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
