#!/usr/bin/env python3
"""Checks plot_stats.run_labels: runs in folders that share a basename get distinct labels."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
from plot_stats import run_labels  # noqa: E402

with tempfile.TemporaryDirectory() as root:
    for d in ("a/h100", "b/h100", "x/y/a100", "z/y/a100"):
        os.makedirs(os.path.join(root, d))
    def run(*dirs):
        return run_labels([os.path.join(root, d) for d in dirs])
    cases = [
        (run("a/h100", "b/h100"), ["a/h100", "b/h100"]),
        (run("a/h100", "x/y/a100"), ["h100", "a100"]),
        (run("x/y/a100", "z/y/a100", "a/h100"), ["x/y/a100", "z/y/a100", "h100"]),
        (run_labels([os.path.join(root, "a/h100"), os.path.join(root, "a/h100/stats.json")]), ["h100 [0]", "h100 [1]"]),
    ]
    failed = [(got, want) for got, want in cases if got != want]
    for got, want in failed:
        print(f"run_labels: expected {want}, got {got}")
    sys.exit(1 if failed else 0)
