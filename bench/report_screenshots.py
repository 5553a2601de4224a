#!/usr/bin/env python3
"""Screenshots of the demo's provenance report in a real browser (headless Chromium), for a person to look at.

    .venv/bin/python bench/report_screenshots.py                   # run the demo into bench/_work, then shoot
    .venv/bin/python bench/report_screenshots.py --run demo-run    # shoot a finished demo run's report

The report is a static HTML file with its charts embedded; Chromium renders it as a reader would see it
(Debian: `apt-get install chromium`). Each screenshot is one place of the report at 1280 px wide: the
first screen (the verdict), the lineage, the holdout status with the leaked ids, the evaluation and dose
curve, and the model card. PNGs go to docs/images/report-*.png; bench/results/report_screenshots.md
lists them with the command and the browser version (bench/run_all puts it into bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from machine import cpu_model, nproc  # noqa: E402  (bench/machine.py)

from pairstore.files import atomic_write_text  # noqa: E402

IMAGES = ROOT / "docs" / "images"
RESULT = HERE / "results" / "report_screenshots.md"
WIDTH = 1280
# (file name, anchor in the report, height in px, what it shows)
SHOTS = (
    ("report-verdict.png", "", 1000, "the first screen: the verdict against the incumbent and the leaks"),
    ("report-lineage.png", "lineage", 1100, "the lineage: what ran, planned (recipe) stages, the chart"),
    ("report-holdout.png", "holdout", 1100, "holdout status: every leaked held-out id with file and rows"),
    ("report-composition.png", "composition", 700, "mixture composition per round (legend beside the bars)"),
    ("report-evaluation.png", "evaluation", 1000, "evaluation of the chain: accuracy, paired tests, judge"),
    ("report-dose-curve.png", "dose-curve", 1000, "the dose curve with its 95% Wilson intervals"),
    ("report-model-card.png", "model-card", 1300, "the model card sections rendered as HTML"),
)


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("no Chromium on PATH (Debian: apt-get install chromium)")


def one_section(html: Path, anchor: str, work: Path) -> Path:
    """The report with only the section `anchor` shown (headless Chromium does not scroll to a #fragment
    before its screenshot): the same page, styles and charts, the other sections hidden."""
    css = f"<style>nav,section{{display:none}}section#{anchor}{{display:block}}</style></head>"
    page = work / f"{html.stem}-{anchor}.html"
    page.write_text(html.read_text(encoding="utf-8").replace("</head>", css, 1), encoding="utf-8")
    return page


def shoot(chromium: str, html: Path, anchor: str, height: int, out: Path) -> None:
    page = one_section(html, anchor, out.parent.parent / ".screenshot-pages") if anchor else html
    url = page.resolve().as_uri()
    tmp = out.with_name(f".{out.name}.tmp.png")
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--window-size={WIDTH},{height}",
            f"--screenshot={tmp}",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    os.replace(tmp, out)
    if anchor:
        page.unlink()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, default=None, help="a finished demo run (default: run the demo)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    run = args.run
    if run is None:
        from pairstore.cli.demo import run_demo

        run = HERE / "_work" / "screenshot-demo"
        run_demo(run)
    html = run / "report" / "report.html"
    if not html.is_file():
        raise SystemExit(f"no report at {html} (run the demo first, or leave out --run)")
    chromium = browser()
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout.strip()
    IMAGES.mkdir(parents=True, exist_ok=True)
    (IMAGES.parent / ".screenshot-pages").mkdir(exist_ok=True)
    rows = []
    for name, anchor, height, what in SHOTS:
        shoot(chromium, html, anchor, height, IMAGES / name)
        rows.append(f"| `docs/images/{name}` | {what} | {WIDTH}x{height} |")
    shutil.rmtree(IMAGES.parent / ".screenshot-pages", ignore_errors=True)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    shown = ["--run", str(args.run)] if args.run else []
    text = "\n".join(
        [
            "## The demo's report in a browser (bench/report_screenshots.py)",
            "",
            f"Command: `{' '.join(['.venv/bin/python', 'bench/report_screenshots.py', *shown])}`",
            f"Browser: {version}, headless, {WIDTH} px wide. Machine: nproc {nproc()}; {cpu_model()}; "
            f"load average {load}; {time.perf_counter() - t0:.0f} s in all.",
            "",
            "| screenshot | what it shows | size |",
            "| --- | --- | --- |",
            *rows,
            "",
        ]
    )
    atomic_write_text(RESULT, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
