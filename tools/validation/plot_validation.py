#!/usr/bin/env python3
"""Plots of `warpsim validate` results: simulated against measured, one figure per category.

    python3 tools/validation/plot_validation.py VALIDATION.json --out DIR
    python3 tools/validation/plot_validation.py --check      # exit 0 when matplotlib can be used

Writes DIR/<category>.png and DIR/<category>.svg: a scatter of the ok cases (measured on x, simulated on y), one
colour per GPU, with the y = x line and a +-10% band; log-log axes when the figures span more than 10x. A
category whose cases use several metrics gets one panel per metric (their units differ).
"""
import argparse
import json
import os
import re
import sys

BAND = 0.10          # the +-10% band drawn around y = x
LOG_SPAN = 10.0      # log-log axes when max/min of the figures exceeds this


def import_matplotlib(argv):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        # Debian's python3-matplotlib belongs to /usr/bin/python3; another python3 may be first on PATH.
        if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + argv)
        print("plot_validation: needs matplotlib (Debian package python3-matplotlib)", file=sys.stderr)
        sys.exit(3)


def file_name(category):
    """A category as a file name: anything but letters, digits, '.', '-' and '_' becomes '_'."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", category)
    return name if name.strip(".") else "category"


def plot_category(plt, category, cases, out_dir):
    metrics = sorted({c["metric"] for c in cases})
    gpus = sorted({c["gpu"] for c in cases})
    colours = {g: plt.cm.tab10(i % 10) for i, g in enumerate(gpus)}
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 5.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        ok = [c for c in cases if c["metric"] == metric and c["status"] == "ok"]
        unit = next((c.get("unit", "") for c in cases if c["metric"] == metric), "")
        values = [c["measured"] for c in ok] + [c["simulated"] for c in ok]
        positive = [v for v in values if v > 0]
        if positive:
            lo, hi = min(positive), max(positive)
            log = hi / lo > LOG_SPAN
            pad = 1.3 if log else 1.08
            lo, hi = (lo / pad, hi * pad) if log else (max(0.0, lo - (pad - 1) * hi), hi * pad)
            line = [lo, hi]
            ax.plot(line, line, color="black", linewidth=1, label="simulated = measured")
            ax.fill_between(line, [v * (1 - BAND) for v in line], [v * (1 + BAND) for v in line], color="grey",
                            alpha=0.2, label=f"±{BAND:.0%}")
            if log:
                ax.set_xscale("log")
                ax.set_yscale("log")
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
        for gpu in gpus:
            mine = [c for c in ok if c["gpu"] == gpu]
            if mine:
                ax.scatter([c["measured"] for c in mine], [c["simulated"] for c in mine], color=colours[gpu],
                           label=os.path.basename(gpu), zorder=3)
        label = f"{metric} [{unit}]" if unit else metric
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"simulated {label}")
        skipped = sum(1 for c in cases if c["metric"] == metric and c["status"] != "ok")
        ax.set_title(f"{category}: {len(ok)} cases" + (f" ({skipped} not simulated)" if skipped else ""))
        ax.grid(True, which="both", alpha=0.3)
        if ok:
            ax.legend(fontsize=8)
        else:  # every case unsupported, failed or skipped: say so rather than draw empty axes
            ax.text(0.5, 0.5, "no case simulated\n(see the report for why)", ha="center", va="center",
                    transform=ax.transAxes)
    fig.tight_layout()
    written = []
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{file_name(category)}.{ext}")
        fig.savefig(path, dpi=120)
        written.append(path)
    plt.close(fig)
    return written


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="?", help="the JSON `warpsim validate --json` writes")
    ap.add_argument("--out", default="validation-plots", help="directory of the plots")
    ap.add_argument("--check", action="store_true", help="only check that matplotlib can be used")
    args = ap.parse_args(argv)
    plt = import_matplotlib(argv)
    if args.check:
        return 0
    if not args.json:
        ap.error("give the JSON file of `warpsim validate --json`")
    try:
        with open(args.json) as f:
            data = json.load(f)
        cases = data["cases"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        sys.exit(f"plot_validation: cannot read {args.json} as warpsim validate's JSON: {e}")
    os.makedirs(args.out, exist_ok=True)
    categories = []
    for c in cases:
        if c["category"] not in categories:
            categories.append(c["category"])
    for category in categories:
        for path in plot_category(plt, category, [c for c in cases if c["category"] == category], args.out):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
