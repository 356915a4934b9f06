#!/usr/bin/env python3
"""Golden headline statistics: proves that a refactor left the model's results bit-identical.

    golden_stats.py --warpsim BUILD/warpsim            # run every case, compare with tests/golden/*.json
    golden_stats.py --warpsim BUILD/warpsim --update   # re-baseline (say why in the commit)
    golden_stats.py --warpsim BUILD/warpsim --only h100

Compares each kernel's fields and the run totals in stats.json (integers and text exactly, floats to 9
significant digits, i.e. independent of how many digits the writer prints); the simulator's own figures
(`sim`: wall time, speed, RSS, version) are left out. Fields named in a golden file but missing from the run,
or the other way round, count as differences too. Exit status 1 on any difference, 2 on a failed run.
"""
import argparse
import json
import pathlib
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def cases():
    for line in (GOLDEN / "cases.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, *args = shlex.split(line)
        yield name, args


def headline(stats):
    """What the golden files keep: everything but the simulator's own figures and the per-instance statistics
    (thousands of numbers whose sums per kind are kept in each kernel's `counters`)."""
    kept = {k: v for k, v in stats.items() if k != "sim"}
    kept["kernels"] = [{k: v for k, v in kernel.items() if k != "instances"} for kernel in kept.get("kernels", [])]
    return kept


def diff(expected, actual, path=""):
    """Yields 'path: expected X, got Y' for every difference, recursively."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            sub = f"{path}.{key}" if path else key
            if key not in actual:
                yield f"{sub}: missing from the run (golden {expected[key]!r})"
            elif key not in expected:
                yield f"{sub}: new in the run ({actual[key]!r}), not in the golden file"
            else:
                yield from diff(expected[key], actual[key], sub)
    elif isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            yield f"{path}: {len(expected)} entries in the golden file, {len(actual)} in the run"
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from diff(e, a, f"{path}[{i}]")
    elif isinstance(expected, float) or isinstance(actual, float):
        # Floats are compared to 9 significant digits: stats.json may print them with more or fewer digits
        # (a change of JSON writer), but a modelling change moves them far more than that.
        if not (isinstance(expected, (int, float)) and isinstance(actual, (int, float))) or \
                abs(expected - actual) > 1e-9 * max(abs(expected), abs(actual)):
            yield f"{path}: golden {expected!r}, run {actual!r}"
    elif expected != actual:
        yield f"{path}: golden {expected!r}, run {actual!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warpsim", required=True, help="the warpsim executable to check")
    ap.add_argument("--update", action="store_true", help="write the run's results as the new golden files")
    ap.add_argument("--only", default="", help="only cases whose id contains this text")
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, run_args in cases():
            if args.only not in name:
                continue
            out = pathlib.Path(tmp) / name
            cmd = [args.warpsim, "run", *run_args, "--out", str(out), "-q", "--no-progress"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{name}: FAILED to run (exit {proc.returncode}): {shlex.join(cmd)}\n{proc.stderr}")
                sys.exit(2)
            actual = headline(json.loads((out / "stats.json").read_text()))
            golden_file = GOLDEN / f"{name}.json"
            if args.update:
                golden_file.write_text(json.dumps(actual, indent=2) + "\n")
                print(f"{name}: written {golden_file.relative_to(ROOT)}")
                continue
            if not golden_file.exists():
                print(f"{name}: no golden file {golden_file.relative_to(ROOT)} (run with --update)")
                failures += 1
                continue
            problems = list(diff(json.loads(golden_file.read_text()), actual))
            if problems:
                failures += 1
                print(f"{name}: {len(problems)} differences")
                for p in problems[:40]:
                    print("   ", p)
            else:
                print(f"{name}: identical")
    print(f"{'golden:'} {0 if args.update else sum(1 for n, _ in cases() if args.only in n) - failures} passed, "
          f"{failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
