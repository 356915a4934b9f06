#!/usr/bin/env python3
"""Runs `warpsim validate` on the project's reference files and writes validation/REPORT.md.

For each reference file validation/NAME.yaml it runs

    WARPSIM validate --reference validation/NAME.yaml --json validation/results/NAME.json \
        --csv validation/results/NAME.csv --plots validation/plots/NAME -j JOBS

then writes the report (date, warpsim version, per file: a summary per GPU and category, every case, links to the
plots) and updates the summary block of README.md between <!-- validation-summary --> and
<!-- /validation-summary -->. The JSON layout is the one `warpsim validate --json` writes (see validation/README.md).

    tools/validation/make_report.py                          # all of validation/*.yaml, build/warpsim
    tools/validation/make_report.py --warpsim build-rel/warpsim microbenchmarks
    tools/validation/make_report.py --from-json results/a.json results/b.json   # report only, no simulation
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- validation-summary -->"
END = "<!-- /validation-summary -->"


class ReportError(Exception):
    pass


# ---------------------------------------------------------------- formatting

def fmt_num(x, digits=4):
    """A measured or simulated value: `digits` significant digits, no exponent for everyday magnitudes."""
    if x is None:
        return "-"
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return str(x)
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= 7 or magnitude < -3:
        return f"{x:.{digits - 1}e}"
    decimals = max(digits - 1 - magnitude, 0)
    return f"{x:,.{decimals}f}"


def fmt_pct(x, signed=True):
    if x is None:
        return "-"
    return f"{x:+.1f}" if signed else f"{x:.1f}"


def fmt_corr(x):
    return "-" if x is None else f"{x:.3f}"


def cell(text):
    """Text safe inside a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ").strip()


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# ---------------------------------------------------------------- report

def summary_row(label, s):
    worst = "-"
    if s.get("worst_id") is not None:
        worst = f"{s['worst_id']} ({fmt_pct(s.get('worst_error_pct'))}%)"
    return list(label) + [s.get("cases", 0), s.get("ok", 0), s.get("unsupported", 0), s.get("failed", 0),
                          s.get("skipped", 0), fmt_pct(s.get("mape_pct"), signed=False), fmt_pct(s.get("mean_signed_error_pct")), worst,
                          fmt_corr(s.get("correlation"))]


SUMMARY_HEADER = ["cases", "ok", "unsupported", "failed", "skipped", "MAPE %", "mean signed error %", "worst case (error %)",
                  "correlation"]


def summary_table(result):
    """One row per GPU and category, then one per GPU and the file's total."""
    summary = result.get("summary", {})
    rows = []
    for key in sorted(summary.get("by_gpu_category", {})):
        gpu, _, category = key.partition("/")
        rows.append(summary_row((gpu, category), summary["by_gpu_category"][key]))
    by_gpu = summary.get("by_gpu", {})
    if len(by_gpu) > 1:
        for gpu in sorted(by_gpu):
            rows.append(summary_row((gpu, "all"), by_gpu[gpu]))
    if "overall" in summary:
        rows.append(summary_row(("all", "all"), summary["overall"]))
    return table(["GPU", "category"] + SUMMARY_HEADER, rows)


def status_text(case):
    status = case.get("status", "?")
    reason = case.get("reason") or ""
    return f"{status}: {reason}" if reason and status != "ok" else status


def case_table(result):
    rows = []
    for c in result.get("cases", []):
        unit = c.get("unit") or ""
        metric = c.get("metric", "") + (f" ({unit})" if unit else "")
        rows.append([c.get("id", ""), c.get("gpu", ""), metric, fmt_num(c.get("measured")), fmt_num(c.get("simulated")),
                     fmt_pct(c.get("error_pct")), status_text(c)])
    return table(["id", "GPU", "metric", "measured", "simulated", "error %", "status"], rows)


def plot_links(name, result, report_dir, plots_root):
    """Links to plots/NAME/<category>.png (and .svg) that exist, relative to the report."""
    categories = sorted({c.get("category", "") for c in result.get("cases", []) if c.get("category")})
    links = []
    for category in categories:
        png = os.path.join(plots_root, name, category + ".png")
        if os.path.exists(png):
            rel = os.path.relpath(png, report_dir).replace(os.sep, "/")
            svg = os.path.splitext(rel)[0] + ".svg"
            extra = f" ([svg]({svg}))" if os.path.exists(os.path.join(report_dir, svg)) else ""
            links.append(f"- {category}: [{rel}]({rel}){extra}")
    return links


def file_section(name, result, report_dir, plots_root):
    refs = ", ".join(f"`{r}`" for r in result.get("reference", [])) or f"`validation/{name}.yaml`"
    out = [f"## {name}", "", f"Reference: {refs}.", "", summary_table(result), ""]
    links = plot_links(name, result, report_dir, plots_root)
    out += ["Plots (simulated vs measured, y = x and a +-10% band):", ""] + links + [""] if links else \
        ["No plots (drawn by `warpsim validate --plots`; not in a report made from JSON alone).", ""]
    out += ["<details><summary>Every case</summary>", "", case_table(result), "", "</details>", ""]
    return out


def render_report(results, version, date, report_dir, plots_root, budget=0):
    """results: [(name, json)] in file order; plots are looked up under plots_root/NAME/ and linked relative to
    report_dir. Returns the whole REPORT.md text."""
    out = ["# Validation report", "",
           f"Generated {date} by `tools/validation/make_report.py` with {version}"
           + (f", cases over {budget:.3g} warp-instructions skipped" if budget else "") + ".", "",
           "Error % = (simulated - measured) / measured x 100. MAPE and the mean signed error are over the `ok` "
           "cases; `unsupported` cases need a workload kind warpsim does not have yet, `failed` ones were refused "
           "(reason given), `skipped` ones were larger than this report's budget (`--max-warp-instructions`, "
           "given in the header above). Sources of every figure: the reference files and `validation/README.md`.", "",
           "| file | " + " | ".join(SUMMARY_HEADER) + " |", "|---|" + "---|" * len(SUMMARY_HEADER)]
    for name, result in results:
        row = summary_row((name,), result.get("summary", {}).get("overall", {}))
        out.append("| " + " | ".join(cell(c) for c in row) + " |")
    out.append("")
    for name, result in results:
        out += file_section(name, result, report_dir, plots_root)
    return "\n".join(out).rstrip("\n") + "\n"


def render_summary_block(results, date, report_link):
    """The README's block: one line per file, and a link to the full report."""
    rows = []
    for name, result in results:
        s = result.get("summary", {}).get("overall", {})
        rows.append([name, s.get("cases", 0), s.get("ok", 0), s.get("unsupported", 0), s.get("failed", 0),
                     s.get("skipped", 0), fmt_pct(s.get("mape_pct"), signed=False), fmt_pct(s.get("mean_signed_error_pct"))])
    text = [f"Simulated vs measured ({date}; every case in [{report_link}]({report_link})):", "",
            table(["reference file", "cases", "ok", "unsupported", "failed", "skipped", "MAPE %",
                   "mean signed error %"], rows)]
    return "\n".join(text)


def update_readme(readme_path, block):
    """Replaces what lies between the markers; the markers themselves stay."""
    with open(readme_path, encoding="utf-8") as f:
        text = f.read()
    begin = text.find(BEGIN)
    end = text.find(END)
    if begin < 0 or end < 0 or end < begin:
        raise ReportError(f"{readme_path}: expected the markers '{BEGIN}' and then '{END}' around the summary block")
    if text.find(BEGIN, begin + 1) >= 0 or text.find(END, end + 1) >= 0:
        raise ReportError(f"{readme_path}: the summary markers appear more than once")
    new = text[:begin + len(BEGIN)] + "\n" + block.rstrip("\n") + "\n" + text[end:]
    if new != text:
        with open(readme_path, "w", encoding="utf-8") as f:
            f.write(new)
    return new != text


# ---------------------------------------------------------------- running

def warpsim_version(warpsim):
    if warpsim and os.path.exists(warpsim):
        try:
            r = subprocess.run([warpsim, "--version"], capture_output=True, text=True, timeout=30)
            if r.returncode == 0 and r.stdout.strip():
                return r.stdout.strip().splitlines()[0]
        except OSError:
            pass
    try:
        rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True,
                             timeout=30)
        if rev.returncode == 0:
            return "warpsim at source revision " + rev.stdout.strip()
    except OSError:
        pass
    return "(version unknown)"


def run_validate(warpsim, name, jobs, max_warp_instructions):
    # Paths relative to the source tree (validate runs there), so that the report shows no machine's directories.
    reference = f"validation/{name}.yaml"
    if not os.path.exists(os.path.join(ROOT, reference)):
        raise ReportError(f"no reference file '{os.path.join(ROOT, reference)}'")
    plots_dir = f"validation/plots/{name}"
    os.makedirs(os.path.join(ROOT, "validation", "results"), exist_ok=True)
    os.makedirs(os.path.join(ROOT, plots_dir), exist_ok=True)
    out_json = f"validation/results/{name}.json"
    cmd = [os.path.abspath(warpsim), "validate", "--reference", reference, "--json", out_json,
           "--csv", f"validation/results/{name}.csv", "--plots", plots_dir, "-j", str(jobs)]
    if max_warp_instructions:
        cmd += ["--max-warp-instructions", str(max_warp_instructions)]
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, cwd=ROOT)
    out_json = os.path.join(ROOT, out_json)
    # validate exits 2 for a broken reference file; otherwise its JSON says what happened to every case.
    if r.returncode == 2 or not os.path.exists(out_json):
        raise ReportError(f"'{' '.join(cmd)}' failed (exit status {r.returncode})")
    return load_json(out_json)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        raise ReportError(f"cannot read validation results '{path}': {e}")
    if not isinstance(result, dict) or not isinstance(result.get("cases"), list) or "summary" not in result:
        raise ReportError(f"'{path}': expected the JSON of `warpsim validate --json` (with 'cases' and 'summary')")
    return result


def default_names():
    d = os.path.join(ROOT, "validation")
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="reference files under validation/, without .yaml (default: all)")
    p.add_argument("--warpsim", default=os.path.join(ROOT, "build", "warpsim"), help="warpsim binary")
    p.add_argument("-j", "--jobs", type=int, default=2, help="cases simulated at once (validate -j)")
    p.add_argument("--max-warp-instructions", type=float, default=0,
                   help="skip cases estimated above this many warp-instructions (validate's option; 0: none)")
    p.add_argument("--from-json", nargs="+", metavar="JSON",
                   help="write the report from these validate --json files (named after their file name) "
                        "instead of running warpsim")
    p.add_argument("--report", default=os.path.join(ROOT, "validation", "REPORT.md"))
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                   help="README whose summary block is updated ('none': leave it)")
    p.add_argument("--date", help="date written in the report (default: now, UTC)")
    args = p.parse_args(argv)
    try:
        if args.from_json:
            results = [(os.path.splitext(os.path.basename(f))[0], load_json(f)) for f in args.from_json]
        else:
            if not os.path.exists(args.warpsim):
                raise ReportError(f"no warpsim binary at '{args.warpsim}' (build it, or pass --warpsim)")
            results = [(n, run_validate(args.warpsim, n, args.jobs, args.max_warp_instructions)) for n in (args.names or default_names())]
        date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        version = warpsim_version(None if args.from_json else args.warpsim)
        report = render_report(results, version, date, os.path.dirname(os.path.abspath(args.report)),
                               os.path.join(ROOT, "validation", "plots"), args.max_warp_instructions)
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(report)
        print(f"wrote {args.report}", file=sys.stderr)
        if args.readme != "none":
            link = os.path.relpath(args.report, os.path.dirname(os.path.abspath(args.readme))).replace(os.sep, "/")
            changed = update_readme(args.readme, render_summary_block(results, date, link))
            print(f"{'updated' if changed else 'unchanged'}: summary block of {args.readme}", file=sys.stderr)
    except ReportError as e:
        print(f"make_report: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
