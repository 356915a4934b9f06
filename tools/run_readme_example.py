#!/usr/bin/env python3
"""Runs a README example exactly as written, so that the README stays true.

    run_readme_example.py --warpsim BUILD/warpsim NAME

Finds the ```sh block that follows `<!-- readme-example: NAME -->` in README.md and runs its lines, one by
one, with bash in a scratch directory laid out like the source tree (`build/warpsim` is the given binary;
`configs/` and `tools/` are the source tree's). Exit status 1 when a line fails (its output is shown).
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def example_lines(name):
    lines = (ROOT / "README.md").read_text().splitlines()
    marker = f"<!-- readme-example: {name} -->"
    if marker not in lines:
        sys.exit(f"run_readme_example: no '{marker}' in README.md")
    start = lines.index(marker) + 1
    if not lines[start].startswith("```"):
        sys.exit(f"run_readme_example: '{marker}' is not followed by a code block")
    block = []
    for line in lines[start + 1:]:
        if line.startswith("```"):
            return block
        if line.strip() and not line.lstrip().startswith("#"):
            block.append(line)
    sys.exit(f"run_readme_example: the code block after '{marker}' does not end")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warpsim", required=True)
    ap.add_argument("name")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "build"))
        os.symlink(os.path.abspath(args.warpsim), os.path.join(work, "build", "warpsim"))
        for d in ("configs", "tools"):
            os.symlink(ROOT / d, os.path.join(work, d))
        for line in example_lines(args.name):
            print(f"$ {line}", flush=True)
            r = subprocess.run(["bash", "-c", line], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            print(r.stdout, end="")
            if r.returncode != 0:
                print(f"run_readme_example: exit status {r.returncode}: {line}")
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
