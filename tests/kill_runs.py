#!/usr/bin/env python3
"""Kills `warpsim run` at random points and checks that `warpsim compare` never accepts a partial or mixed set.

A reference run of each of two GEMMs first (the longer wall time sets the spread of the delays), then --kills
runs into one directory, alternating between the two GEMMs, each sent SIGKILL after a delay drawn uniformly from [0, 1.2 x the reference's wall time] with a
fixed seed: some die while starting or simulating, some while writing, some finish first. Every run goes into
the directory the previous one left, so a run killed half-way also has an earlier run's files beside its own.
After each, `warpsim compare DIR REF` must either accept DIR, and then each of its result files equals those of
one same reference run (stats.json apart from its `sim` timings), or refuse it as an incomplete run (exit 2). Prints the
counts; exit status 1 on any other outcome. Run by CTest (results_survive_kills).

    python3 tests/kill_runs.py --warpsim build/warpsim [--kills 50] [--seed 6]
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

# Runs alternate between two GEMMs, so that a directory mixing the files of two runs differs from both references.
GEMMS = ["256x256x256", "256x128x256"]


def run_args(warpsim, gemm, out):
    return [warpsim, "run", "--gemm", gemm, "--out", out, "-q", "--no-progress"]


def without_timings(stats_text):
    stats = json.loads(stats_text)
    stats.pop("sim", None)  # wall time, peak RSS: differ from run to run
    return stats


def read(path):
    with open(path, "rb") as f:
        return f.read()


RESULT_FILES = ["stats.json", "stats.csv", "config.resolved.yaml", "timeline.json"]


def differing_from_reference(out, ref):
    """The result files of `out` that are missing or differ from the reference run's."""
    differing = []
    for name in RESULT_FILES:
        if not os.path.exists(os.path.join(out, name)):
            differing.append(name)
            continue
        mine, theirs = read(os.path.join(out, name)), read(os.path.join(ref, name))
        try:
            equal = without_timings(mine) == without_timings(theirs) if name == "stats.json" else mine == theirs
        except ValueError:  # a truncated stats.json
            equal = False
        if not equal:
            differing.append(name)
    return differing


def snapshot(out):
    """Name -> modification time of what is in `out`: what a run changed, to tell kills during the writing."""
    return {e.name: e.stat().st_mtime_ns for e in os.scandir(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warpsim", required=True)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=6)
    args = ap.parse_args()
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="warpsim-kill-") as tmp:
        refs, out = [os.path.join(tmp, f"ref{i}") for i in range(len(GEMMS))], os.path.join(tmp, "out")
        os.mkdir(out)  # a run killed before it creates the directory leaves an empty one, not none
        run_s = 0.0
        for gemm, ref in zip(GEMMS, refs):
            start = time.monotonic()
            subprocess.run(run_args(args.warpsim, gemm, ref), check=True, env=env, stderr=subprocess.DEVNULL)
            run_s = max(run_s, time.monotonic() - start)
        counts = {"complete": 0, "refused": 0}
        finished_before_kill = killed_while_writing = 0
        failures = []
        for i in range(args.kills):
            delay = rng.uniform(0, 1.2 * run_s)
            before = snapshot(out)
            proc = subprocess.Popen(run_args(args.warpsim, GEMMS[i % len(GEMMS)], out), env=env, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            else:
                finished_before_kill += 1
            proc.wait()
            if proc.returncode not in (0, -signal.SIGKILL):
                failures.append(f"kill {i} after {delay:.3f} s: the run itself exited {proc.returncode}")
                continue
            cmp = subprocess.run([args.warpsim, "compare", out, refs[0]], env=env, capture_output=True, text=True)
            if cmp.returncode == 0:
                counts["complete"] += 1
                differing = [differing_from_reference(out, ref) for ref in refs]
                if all(differing):
                    failures.append(f"kill {i} after {delay:.3f} s: compare accepted a set that is no reference run's "
                                    f"(differing files from each: {differing})")
            elif cmp.returncode == 2 and "incomplete run" in cmp.stderr:
                counts["refused"] += 1
                after = snapshot(out)
                if any(after.get(name) != before.get(name) for name in RESULT_FILES + [n for n in after if n.startswith(".")]):
                    killed_while_writing += 1
            else:
                failures.append(f"kill {i} after {delay:.3f} s: compare exited {cmp.returncode}: {cmp.stderr.strip()}")
        print(f"{args.kills} kills over [0, {1.2 * run_s:.2f}] s (a run takes {run_s:.2f} s; seed {args.seed}): "
              f"{counts['complete']} complete (equal to a reference), {counts['refused']} refused as incomplete, "
              f"{killed_while_writing} of them killed while writing; {finished_before_kill} finished before their kill")
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
