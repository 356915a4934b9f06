#!/usr/bin/env python3
"""Renders `warpsim report`'s HTML in headless Chromium and checks that the screenshot is not blank.

A tiny sweep (2 candidates x 2 GEMMs of 128^3, a few seconds) is planned, run and reported, unless --html names
an existing report. The screenshot passes when a good share of it is not white and the plots' palette colours
appear (the inline SVG was drawn, not only the text). Exits 77 (skipped) when Chromium is not installed
(`tools/deps.sh --browser` installs it).

  tools/render_report.py --warpsim build/warpsim [--keep DIR] [--height 2400]
  tools/render_report.py --html report.html --screenshot shot.png
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

CHROMIUM = "/usr/bin/chromium"
SKIPPED = 77
# The first series colours of app/sweep/svg_chart.cpp's palette: bars and markers of the first candidates.
PLOT_COLOURS = {"#4c78a8": (0x4C, 0x78, 0xA8), "#f58518": (0xF5, 0x85, 0x18)}


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"render_report: {' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def make_report(warpsim, work):
    spec = os.path.join(work, "tiny.yaml")
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = os.path.join(source, "configs", "h100_sxm.yaml")
    with open(spec, "w") as f:
        f.write(f"name: render\nbase: {base}\ncandidates:\n  h100: {{}}\n  more_sms: {{set: {{sm.count: 144}}}}\n"
                "workloads:\n  - synth: gemm\n    m: [128, 256]\n    n: 128\n    k: 128\n")
    run_dir = os.path.join(work, "run")
    run([warpsim, "sweep", "plan", spec, "-o", run_dir])
    run([warpsim, "sweep", "submit", run_dir, "--backend", "local", "-j", "2"])
    html = os.path.join(work, "report.html")
    run([warpsim, "report", run_dir, "-o", html])
    return html


def screenshot(html, png, height):
    profile = tempfile.mkdtemp(prefix="warpsim-chromium-")
    try:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", f"--screenshot={png}", f"--window-size=1280,{height}",
               "file://" + os.path.abspath(html)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        if r.returncode != 0 or not os.path.exists(png):
            sys.exit(f"render_report: chromium wrote no screenshot (exit {r.returncode}):\n{r.stderr[-2000:]}")
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def check(png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(png)  # floats in [0, 1], RGB or RGBA
    rgb = (img[:, :, :3] * 255).round().astype(np.int32)
    pixels = rgb.reshape(-1, 3)
    not_white = np.any(pixels < 245, axis=1).mean()
    distinct = len(np.unique((pixels // 16) @ np.array([256, 16, 1])))
    print(f"render_report: {png}: {rgb.shape[1]}x{rgb.shape[0]}, {100 * not_white:.1f}% not white, "
          f"{distinct} distinct colours (16 levels a channel)")
    problems = []
    if not_white < 0.05:
        problems.append(f"only {100 * not_white:.1f}% of the page is not white: blank?")
    if distinct < 12:
        problems.append(f"only {distinct} distinct colours: the plots were not drawn?")
    for name, (r, g, b) in PLOT_COLOURS.items():
        near = np.all(np.abs(pixels - np.array([r, g, b])) <= 6, axis=1).sum()
        print(f"render_report: {near} pixels of the plot colour {name}")
        if near < 500:
            problems.append(f"the plot colour {name} covers only {near} pixels: the SVG bars were not drawn?")
    for p in problems:
        print("render_report: FAIL: " + p)
    return not problems


def ensure_matplotlib():
    """Debian's python3-matplotlib lives in /usr/bin/python3's path; another python3 first on PATH (pyenv) lacks it."""
    try:
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.access(system, os.X_OK):
            os.execv(system, [system] + sys.argv)
        sys.exit("render_report: needs python3-matplotlib (tools/deps.sh installs it)")


def main():
    ensure_matplotlib()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warpsim", help="the warpsim executable (to make a tiny sweep's report)")
    ap.add_argument("--html", help="an existing report to render instead")
    ap.add_argument("--screenshot", help="where to write the screenshot (default: a temporary file)")
    ap.add_argument("--keep", help="keep the report and the screenshot in this directory")
    ap.add_argument("--height", type=int, default=2400, help="window height in pixels (default 2400)")
    args = ap.parse_args()
    if not os.access(CHROMIUM, os.X_OK):
        print(f"render_report: {CHROMIUM} is not installed (tools/deps.sh --browser): skipped")
        return SKIPPED
    if not args.html and not args.warpsim:
        ap.error("give --warpsim (to make a report) or --html")
    work = args.keep or tempfile.mkdtemp(prefix="warpsim-render-")
    os.makedirs(work, exist_ok=True)
    try:
        html = args.html or make_report(args.warpsim, work)
        png = args.screenshot or os.path.join(work, "screenshot.png")
        screenshot(html, png, args.height)
        return 0 if check(png) else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
