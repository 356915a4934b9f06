#!/usr/bin/env python3
"""Plots of warpsim results, for when a picture says it faster than stats.json.

    python3 tools/stats/plot_stats.py RUN_DIR [RUN_DIR ...] -o plot.png

One row per kernel: on the left, where the warps spent their cycles (Nsight warp states, as a share of
warp-cycles), one bar per run; on the right, how busy each unit was (fraction of peak). Runs are labelled by
their directory name, or by as many trailing path components as it takes to tell runs apart (a/h100 and
b/h100), so several design candidates can be compared side by side.
"""
import argparse
import json
import os
import sys


def load(path):
    file = os.path.join(path, "stats.json") if os.path.isdir(path) else path
    try:
        with open(file) as f:
            stats = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"plot_stats: cannot read {file}: {e}")
    if "kernels" not in stats:
        sys.exit(f"plot_stats: {file} is not a warpsim stats.json (no 'kernels')")
    return stats


def run_labels(paths):
    """One label per run: the shortest trailing part of its directory's path that no other run shares."""
    dirs = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".") for p in paths]
    parts = [d.strip(os.sep).split(os.sep) for d in dirs]
    labels = []
    for i, p in enumerate(parts):
        for n in range(1, len(p) + 1):
            suffix = p[-n:]
            if all(q[-n:] != suffix for j, q in enumerate(parts) if j != i):
                break
        else:  # the same directory as another run: its name, numbered below
            suffix = p[-1:]
        labels.append(os.path.join(*suffix) if suffix else os.sep)
    # The same directory given twice (e.g. once as DIR, once as DIR/stats.json) still gets two bars.
    return [f"{label} [{i}]" if labels.count(label) > 1 else label for i, label in enumerate(labels)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run output directories or stats.json files")
    ap.add_argument("-o", "--output", default="warpsim-plot.png", help="PNG to write")
    args = ap.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's python3-matplotlib belongs to /usr/bin/python3; another python3 may be first on PATH.
        if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__)] + argv)
        sys.exit("plot_stats: needs matplotlib (Debian package python3-matplotlib; tools/deps.sh installs it)")

    runs = list(zip(run_labels(args.runs), (load(p) for p in args.runs)))
    n_kernels = max(len(s["kernels"]) for _, s in runs)
    fig, axes = plt.subplots(n_kernels, 2, figsize=(13, 1.2 + 0.9 * len(runs) * n_kernels + 1.5 * n_kernels),
                             squeeze=False)
    for k in range(n_kernels):
        ax_stall, ax_util = axes[k]
        names = [label for label, s in runs if k < len(s["kernels"])]
        kernels = [s["kernels"][k] for _, s in runs if k < len(s["kernels"])]
        reasons = list(kernels[0]["stalls"].keys())
        left = [0.0] * len(kernels)
        colors = plt.get_cmap("tab10")
        for i, reason in enumerate(reasons):
            shares = []
            for kr in kernels:
                total = sum(kr["stalls"].values()) or 1
                shares.append(kr["stalls"].get(reason, 0) / total)
            ax_stall.barh(names, shares, left=left, color=colors(i % 10), label=reason.replace("stall_", ""))
            left = [a + b for a, b in zip(left, shares)]
        ax_stall.set_xlim(0, 1)
        ax_stall.set_xlabel("share of warp-cycles")
        title = kernels[0]["name"]
        ax_stall.set_title(title if len(title) < 70 else title[:67] + "...", fontsize=9, loc="left")
        ax_stall.legend(fontsize=7, ncol=3, loc="lower right", bbox_to_anchor=(1.0, 1.08))
        units = list(kernels[0]["utilization"].keys())
        width = 0.8 / len(kernels)
        for j, (name, kr) in enumerate(zip(names, kernels)):
            xs = [u + j * width for u in range(len(units))]
            t = kr["time_us"]
            ax_util.bar(xs, [kr["utilization"][u] for u in units], width=width, label=f"{name} ({t:.1f} us)")
        ax_util.set_xticks([u + 0.4 - width / 2 for u in range(len(units))])
        ax_util.set_xticklabels(units)
        ax_util.set_ylim(0, 1.05)
        ax_util.set_ylabel("fraction of peak")
        ax_util.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
