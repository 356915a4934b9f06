#!/usr/bin/env python3
"""Checks that the floors of warpsim include only what lies below them.

    sim/      the engine, config, stats, traces' common format, registry, slot interfaces (no SystemC but sim/sc)
    models/   component implementations; only the assembler (models/gpu) sees the whole GPU
    traces/   synthesizers and trace readers
    app/      the command line and reports, on top

Each rule names a folder and the include prefixes its files may not use. Prints every violation with file and
line; exit status 1 if there is any. Run by CTest (layers_include_only_below).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')

# (folder, files it applies to except those under `exempt`, forbidden include prefixes, why)
RULES = [
    ("sim", [], ["models/", "traces/", "app/"], "the engine sits below models, traces and the application"),
    ("sim", ["sim/sc"], ["systemc", "sysc/", "tlm"], "SystemC stays in the thin sim/sc layer"),
    ("models", ["models/gpu"], ["models/gpu/", "app/", "traces/"],
     "a model sees its slots through sim/slots, not the assembler, the application or the workloads"),
    ("models", [], ["app/", "systemc", "sysc/"], "models run under any driver and know nothing of the application"),
    ("traces", [], ["models/", "app/", "systemc", "sysc/"], "workloads do not depend on the hardware models"),
]

SOURCE_SUFFIXES = {".h", ".hpp", ".cpp", ".cc"}


def main():
    problems = []
    for folder, exempt, forbidden, why in RULES:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            rel = path.relative_to(ROOT).as_posix()
            if any(rel.startswith(e + "/") for e in exempt):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and any(m.group(1).startswith(f) for f in forbidden):
                    problems.append(f"{rel}:{number}: includes {m.group(1)}: {why}")
    if (ROOT / "sim" / "app").exists():
        problems.append("sim/app exists: the application lives in app/, above models and traces")
    for p in problems:
        print(p)
    print(f"layers: {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
