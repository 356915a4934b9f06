#!/usr/bin/env python3
"""Checks make_report.py's report half on a hand-made `warpsim validate --json` result: the summary and per-case
table rows, and the in-place update of a README's summary block (text outside the markers untouched, a second run
changes nothing, missing markers are an error)."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import make_report  # noqa: E402

# Two ok cases with errors of +10% and -20% (measured 1000 -> simulated 1100; measured 50 -> simulated 40), one
# unsupported case, one failed case whose reason holds a '|' (must not split the Markdown cell).
CASES = [
    {"id": "a100.gemm.big", "gpu": "a100_sxm", "category": "gemm", "kind": "gemm", "metric": "time_us",
     "measured": 1000.0, "simulated": 1100.0, "error_pct": 10.0, "status": "ok", "reason": "", "source": "s", "unit": "us"},
    {"id": "a100.gemm.small", "gpu": "a100_sxm", "category": "gemm", "kind": "gemm", "metric": "time_us",
     "measured": 50.0, "simulated": 40.0, "error_pct": -20.0, "status": "ok", "reason": "", "source": "s", "unit": "us"},
    {"id": "a100.attn", "gpu": "a100_sxm", "category": "attention", "kind": "attention", "metric": "time_us",
     "measured": 1881.1, "simulated": None, "error_pct": None, "status": "unsupported",
     "reason": "workload kind 'attention' is not registered yet", "source": "s", "unit": "us"},
    {"id": "h100.lat.l1", "gpu": "h100_sxm", "category": "latency", "kind": "pointer_chase", "metric": "latency_cycles",
     "measured": 40.0, "simulated": None, "error_pct": None, "status": "failed",
     "reason": "footprint 0 B | expected at least one stride", "source": "s", "unit": "cycles"},
]
# The summary as validate computes it: MAPE = (10 + 20) / 2 = 15, mean signed error = (10 - 20) / 2 = -5; with two
# points the Pearson correlation of (1000, 1100) and (50, 40) is exactly 1.
GEMM = {"cases": 2, "ok": 2, "unsupported": 0, "failed": 0, "mape_pct": 15.0, "mean_signed_error_pct": -5.0,
        "worst_id": "a100.gemm.small", "worst_error_pct": -20.0, "correlation": 1.0}
NONE_OK = {"mape_pct": None, "mean_signed_error_pct": None, "worst_id": None, "worst_error_pct": None,
           "correlation": None}
ATTN = dict(NONE_OK, cases=1, ok=0, unsupported=1, failed=0)
LAT = dict(NONE_OK, cases=1, ok=0, unsupported=0, failed=1)
A100 = dict(GEMM, cases=3, unsupported=1)
OVERALL = dict(GEMM, cases=4, unsupported=1, failed=1)
RESULT = {"reference": ["validation/fake.yaml"], "cases": CASES,
          "summary": {"overall": OVERALL, "by_gpu": {"a100_sxm": A100, "h100_sxm": LAT},
                      "by_category": {"gemm": GEMM, "attention": ATTN, "latency": LAT},
                      "by_gpu_category": {"a100_sxm/gemm": GEMM, "a100_sxm/attention": ATTN, "h100_sxm/latency": LAT}}}

README = """# project

Intro text.

<!-- validation-summary -->
old summary that must go
<!-- /validation-summary -->

Text after the block.
"""

failures = []


def expect(what, condition):
    if not condition:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    js = os.path.join(tmp, "fake.json")
    with open(js, "w") as f:
        json.dump(RESULT, f)
    readme = os.path.join(tmp, "README.md")
    with open(readme, "w") as f:
        f.write(README)
    report = os.path.join(tmp, "REPORT.md")
    args = ["--from-json", js, "--report", report, "--readme", readme, "--date", "2026-01-02 03:04 UTC"]
    expect("first run exits 0", make_report.main(args) == 0)
    text = open(report).read()
    lines = text.splitlines()
    # Summary rows: GPU/category, cases, ok, unsupported, failed, skipped, MAPE, mean signed error, worst, correlation.
    expected_rows = [
        "| a100_sxm | gemm | 2 | 2 | 0 | 0 | 0 | 15.0 | -5.0 | a100.gemm.small (-20.0%) | 1.000 |",
        "| a100_sxm | attention | 1 | 0 | 1 | 0 | 0 | - | - | - | - |",
        "| h100_sxm | latency | 1 | 0 | 0 | 1 | 0 | - | - | - | - |",
        "| a100_sxm | all | 3 | 2 | 1 | 0 | 0 | 15.0 | -5.0 | a100.gemm.small (-20.0%) | 1.000 |",
        "| all | all | 4 | 2 | 1 | 1 | 0 | 15.0 | -5.0 | a100.gemm.small (-20.0%) | 1.000 |",
        "| fake | 4 | 2 | 1 | 1 | 0 | 15.0 | -5.0 | a100.gemm.small (-20.0%) | 1.000 |",
        # Per-case rows: id, GPU, metric (unit), measured, simulated, error %, status.
        "| a100.gemm.big | a100_sxm | time_us (us) | 1,000 | 1,100 | +10.0 | ok |",
        "| a100.gemm.small | a100_sxm | time_us (us) | 50.00 | 40.00 | -20.0 | ok |",
        "| a100.attn | a100_sxm | time_us (us) | 1,881 | - | - | unsupported: workload kind 'attention' is not "
        "registered yet |",
        "| h100.lat.l1 | h100_sxm | latency_cycles (cycles) | 40.00 | - | - | failed: footprint 0 B \\| expected at "
        "least one stride |",
    ]
    for row in expected_rows:
        expect(f"report has the row {row!r}", row in lines)
    expect("report names the date", "2026-01-02 03:04 UTC" in text)
    expect("report says there are no plots", "No plots" in text)

    new = open(readme).read()
    expect("old summary removed", "old summary that must go" not in new)
    expect("text before and after the block kept",
           new.startswith("# project\n\nIntro text.\n\n<!-- validation-summary -->\n")
           and new.endswith("<!-- /validation-summary -->\n\nText after the block.\n"))
    expect("README block has the file's row", "| fake | 4 | 2 | 1 | 1 | 0 | 15.0 | -5.0 |" in new)
    expect("README block links the report", "[REPORT.md](REPORT.md)" in new)
    expect("second run exits 0", make_report.main(args) == 0)
    expect("second run leaves the README as it was", open(readme).read() == new)

    with open(readme, "w") as f:
        f.write("# no markers here\n")
    expect("a README without the markers is an error (exit 2)", make_report.main(args) == 2)
    expect("and is left alone", open(readme).read() == "# no markers here\n")

    with open(js, "w") as f:
        f.write("{\"not\": \"a result\"}")
    expect("a JSON without cases and summary is an error (exit 2)", make_report.main(args) == 2)

for what in failures:
    print(f"FAILED: {what}")
sys.exit(1 if failures else 0)
