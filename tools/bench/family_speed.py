#!/usr/bin/env python3
"""Simulator speed per kernel family: warp-instructions per second, wall time and peak RSS of `warpsim run` on one
representative workload of each synthesizer family, for one or more warpsim binaries (e.g. before and after a
change), run alternately so that a busy machine slows them alike. A benchmark that prints figures, not a test.

    python3 tools/bench/family_speed.py build/warpsim [OTHER_WARPSIM[:CONFIG_DIR] ...] [--only REGEX] [--repeat N]

An older binary whose shipped configs differ takes them from CONFIG_DIR (WARPSIM_CONFIG_DIR), e.g. the `configs`
folder of `git archive <rev> configs`.

A workload a binary cannot run (a synthesizer it does not have yet) is reported as `-`.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

# family, GPU, synthesizer and keys: small enough for seconds per run, large enough to fill the GPU.
WORKLOADS = [
    ("gemm sm_90", "h100_sxm", "gemm", dict(m=2048, n=2048, k=2048, dtype="bf16")),
    ("gemm sm_80", "a100_sxm", "gemm", dict(m=2048, n=2048, k=2048, dtype="fp16")),
    ("attention fa2 fwd", "a100_sxm", "attention",
     dict(variant="fa2", batch=1, heads=16, seqlen_q=2048, seqlen_kv=2048, head_dim=128, dtype="fp16")),
    ("attention fa2 bwd", "a100_sxm", "attention",
     dict(variant="fa2", direction="bwd", batch=1, heads=8, seqlen_q=1024, seqlen_kv=1024, head_dim=128, dtype="fp16")),
    ("attention decode", "h100_sxm", "attention",
     dict(variant="decode", batch=8, heads=32, kv_heads=8, seqlen_q=1, seqlen_kv=4096, head_dim=128, dtype="fp16")),
    ("softmax", "h100_sxm", "softmax", dict(rows=4096, cols=4096, dtype="fp16")),
    ("rmsnorm", "h100_sxm", "rmsnorm", dict(rows=4096, cols=4096, dtype="fp16")),
    ("elementwise", "h100_sxm", "elementwise", dict(op="silu", elements=16 << 20, dtype="fp16")),
    ("microbench stream", "h100_sxm", "stream", dict(op="copy", bytes="64MiB")),
    ("microbench tensor", "h100_sxm", "tensor_throughput", dict(warps=8)),
]


def run(warpsim, gpu, kind, keys):
    env = dict(os.environ)
    if ":" in warpsim:
        warpsim, env["WARPSIM_CONFIG_DIR"] = warpsim.split(":", 1)
    with tempfile.TemporaryDirectory() as out:
        cmd = [warpsim, "run", "--gpu", gpu, "--synth", kind, "--out", out]
        for k, v in keys.items():
            cmd += ["--synth-key", f"{k}={v}"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            return None
        sim = json.load(open(f"{out}/stats.json"))["sim"]
        return sim["warp_instructions_per_s"], sim["wall_s"], sim["peak_rss_mb"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("warpsim", nargs="+")
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    print(f"{'family':20}" + "".join(f"  {'M winst/s':>9} {'wall s':>7} {'RSS MB':>6}" for _ in a.warpsim))
    for family, gpu, kind, keys in WORKLOADS:
        if not re.search(a.only, family):
            continue
        row = []
        for w in a.warpsim:
            runs = [r for r in (run(w, gpu, kind, keys) for _ in range(a.repeat)) if r]
            row.append(None if not runs else tuple(statistics.median(x) for x in zip(*runs)))
        print(f"{family:20}" + "".join(f"  {r[0] / 1e6:9.2f} {r[1]:7.1f} {r[2]:6.0f}" if r else f"  {'-':>9} {'-':>7} {'-':>6}"
                                       for r in row), flush=True)


if __name__ == "__main__":
    main()
