#!/usr/bin/env python3
"""Runs a README example exactly as written, so that the README stays true.

    run_readme_example.py --warpsim BUILD/warpsim NAME
    run_readme_example.py --files      # every block after `<!-- readme-file: PATH -->` is that file, verbatim

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


def check_files():
    """Each code block after `<!-- readme-file: PATH -->` must equal the file PATH of the source tree."""
    lines = (ROOT / "README.md").read_text().splitlines()
    checked = failures = 0
    for i, line in enumerate(lines):
        if not line.startswith("<!-- readme-file: "):
            continue
        path = line[len("<!-- readme-file: "):].removesuffix(" -->").strip()
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        block = "\n".join(lines[i + 2:end]) + "\n"
        checked += 1
        if not (ROOT / path).exists() or (ROOT / path).read_text() != block:
            failures += 1
            print(f"README.md:{i + 1}: the block differs from {path}")
    print(f"readme files: {checked - failures} passed, {failures} failed")
    return 1 if failures or not checked else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warpsim")
    ap.add_argument("--files", action="store_true", help="check the README's copies of source files")
    ap.add_argument("name", nargs="?")
    args = ap.parse_args()
    if args.files:
        return check_files()
    if not args.warpsim or not args.name:
        ap.error("--warpsim and NAME are required (or --files)")
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
