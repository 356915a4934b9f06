#!/usr/bin/env python3
"""Checks the GPU configs in configs/ for sourcing and consistency, and prints what they add up to.

    python3 tools/check_configs.py [config.yaml ...]      (default: configs/*.yaml configs/experiments/*.yaml)

Checks:
  * every line that sets a value carries a comment naming its source (configs/README.md, "Where the numbers
    come from");
  * every calibration id cited in a comment exists in ../shared/calibration/hw_calibration.yaml (skipped when
    ../shared is absent) -- an id whose entry is flagged (quality: suspect/low/conflict/...) is reported as a
    warning, since comments may cite such an entry to say why it is not used;
  * after `base:` inheritance every config sets the same keys (a key missing from one GPU is a mistake).
Prints per config: clocks, SM count, dense BF16 tensor peak, HBM bandwidth, and the latency sums
(L1 / L2 / DRAM load-to-use in SM cycles) that configs/README.md describes.

The simulator itself validates types, units and ranges (`warpsim describe`); this script parses only the
block-style YAML subset the configs use (nested maps, `key: value  # comment`), with the standard library.
Exit status 1 when a check fails.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALIBRATION = os.path.join(ROOT, "..", "shared", "calibration", "hw_calibration.yaml")
# A calibration id: gpu.category.rest, e.g. h100sxm.spec.sm_count, a100_80.lat.l2.gb, gpu.bw.noc.jin.
ID_RE = re.compile(r"\b[a-z0-9_]+\.(?:spec|lat|bw|tp|gemm|attn|llm|train)\.[a-z0-9_]+(?:\.[a-z0-9_\-]+)*")
FLAGGED = {"suspect", "low", "conflict", "lower-bound", "approximate", "host-bound", "setup-unclear", "unclear",
           "partly-occluded-label"}

UNITS = {
    "Hz": 1.0, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9,
    "B/s": 1.0, "KB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12,
    "B": 1.0, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3, "KB": 1e3, "MB": 1e6, "GB": 1e9,
}


def split_comment(line):
    """'  key: value  # comment' -> ('  key: value', 'comment' or None). '#' must follow whitespace."""
    m = re.search(r"(^|\s)#", line)
    if not m:
        return line.rstrip(), None
    return line[:m.start()].rstrip(), line[m.end():].strip()


def parse(path, errors):
    """Returns (tree, base) for one file and records unsourced value lines in `errors`."""
    root = {}
    stack = [(-1, root)]  # (indent, map)
    base = None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            body, comment = split_comment(raw.rstrip("\n"))
            if not body.strip():
                continue
            indent = len(body) - len(body.lstrip(" "))
            m = re.match(r"^\s*([A-Za-z0-9_]+):\s*(.*)$", body)
            if not m:
                errors.append(f"{path}:{number}: cannot parse (this checker reads block-style maps only)")
                continue
            key, value = m.group(1), m.group(2).strip()
            while stack[-1][0] >= indent:
                stack.pop()
            parent = stack[-1][1]
            if value == "":
                child = {}
                parent[key] = child
                stack.append((indent, child))
                continue
            if indent == 0 and key == "base":
                base = value
                continue
            parent[key] = value
            if not comment:
                errors.append(f"{path}:{number}: {key}: {value} has no source comment")
    return root, base


def merge(base, over):
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


def resolve(path, errors, seen=()):
    path = os.path.normpath(path)
    if path in seen:
        errors.append(f"{path}: base cycle")
        return {}
    tree, base = parse(path, errors)
    if base is None:
        return tree
    merged = resolve(os.path.join(os.path.dirname(path), base), errors, seen + (path,))
    merge(merged, tree)
    return merged


def flatten(tree, prefix=""):
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flatten(value, prefix + key + "."))
        else:
            out[prefix + key] = value
    return out


def quantity(text):
    m = re.match(r"^([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/]*)$", text)
    if not m:
        raise ValueError(text)
    return float(m.group(1)) * (UNITS[m.group(2)] if m.group(2) else 1.0)


def calibration_entries():
    """id -> quality ('' when unflagged), or None when the file is absent. Besides the calibration file's entries, the
    cases of this project's own reference files (validation/*.yaml, e.g. h100m.lat.l2 measured on its device) are
    citable ids."""
    if not os.path.exists(CALIBRATION):
        return None
    entries = {}
    for path in [CALIBRATION] + sorted(glob.glob(os.path.join(ROOT, "validation", "*.yaml"))):
        current = None
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^- id:\s*(\S+)", line)
                if m:
                    current = m.group(1)
                    entries.setdefault(current, "")
                    continue
                m = re.match(r"^\s+quality:\s*(\S+)", line)
                if m and current:
                    entries[current] = m.group(1)
    return entries


def check_ids(path, entries, errors, warnings):
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            _, comment = split_comment(raw.rstrip("\n"))
            if not comment:
                continue
            for cid in ID_RE.findall(comment):
                cid = cid.rstrip(".")
                if cid not in entries:
                    errors.append(f"{path}:{number}: cites unknown calibration id {cid}")
                elif entries[cid] in FLAGGED:
                    warnings.append(f"{path}:{number}: cites {cid}, flagged quality: {entries[cid]}")


def summary(path, flat):
    sm = quantity(flat["clocks.sm"])
    l2 = quantity(flat["clocks.l2"])
    hbm = quantity(flat["clocks.hbm"])
    count = int(flat["sm.count"])
    l1_hit = int(flat["l1.hit_latency"])
    noc_one_way = int(flat["noc.sm_to_gpc_latency"]) + int(flat["noc.gpc_to_partition_latency"])
    l2_hit = l1_hit + (2 * noc_one_way + int(flat["l2.hit_latency"])) * sm / l2
    far_hit = l2_hit + 2 * int(flat["noc.partition_link_latency"]) * sm / l2
    # DRAM: lines homed in the near partition, and in the far one (+ the link both ways): half each on average.
    dram = l2_hit + int(flat["hbm.latency"]) * sm / hbm + (far_hit - l2_hit) / 2
    bf16 = count * sm * int(flat["sm.tensor.flops_per_cycle.bf16"]) / 1e12
    return (f"{os.path.relpath(path, ROOT):45s} sm {sm/1e9:.3f} GHz x {count:3d} SMs  bf16 {bf16:7.1f} TFLOPS  "
            f"HBM {quantity(flat['hbm.bandwidth'])/1e12:.3f} TB/s  "
            f"L1 {l1_hit} / L2 {l2_hit:.1f} (far {far_hit:.1f}) / DRAM {dram:.1f} SM cycles ({dram / sm * 1e9:.0f} ns)  "
            f"smem {flat['smem.latency']}")


def main(argv):
    paths = argv or sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml")) +
                           glob.glob(os.path.join(ROOT, "configs", "experiments", "*.yaml")))
    errors, warnings, resolved = [], [], {}
    entries = calibration_entries()
    for path in paths:
        resolved[path] = flatten(resolve(path, errors))
        if entries is not None:
            check_ids(path, entries, errors, warnings)
    if entries is None:
        print(f"note: {CALIBRATION} not found; calibration ids not checked")
    keys = set().union(*(set(f) for f in resolved.values())) if resolved else set()
    for path, flat in resolved.items():
        missing = sorted(keys - set(flat))
        if missing:
            errors.append(f"{path}: after inheritance, sets none of: {', '.join(missing)}")
    for path, flat in resolved.items():
        try:
            print(summary(path, flat))
        except (KeyError, ValueError) as e:
            errors.append(f"{path}: cannot compute summary: {e!r}")
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
