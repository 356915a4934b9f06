#!/usr/bin/env python3
"""Sampling against full simulation: CTA-wave sampling (--sample waves against --sample off) or SM subsetting
(--subset N against the whole GPU): simulated time, its error, DRAM bytes, energy and the wall-time speed-up, for
a fixed set of kernels of different kinds for each. Prints the markdown tables that README "Sampling" shows.

    sample_error.py --warpsim BUILD/warpsim                 # CTA-wave sampling, every case
    sample_error.py --warpsim BUILD/warpsim --only h100     # cases whose name contains h100
    sample_error.py --warpsim BUILD/warpsim --set sim.sample_measured_waves=1   # other sampling parameters
    sample_error.py --warpsim BUILD/warpsim --subset 4      # SM subsetting: 1/4 of the GPU against all of it

Each case runs `warpsim run --driver plain` twice in a scratch directory and reads stats.json: total_time_us,
kernels[].sampling (simulated / total CTAs) and sim.wall_s (the simulation's own wall time, without start-up).
Wall times depend on the machine's load; the errors do not (both runs are deterministic).
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

def gemm(shape, decomposition):
    m, n, k = shape.split("x")
    return ["--synth", "gemm", "--synth-key", f"m={m}", "--synth-key", f"n={n}", "--synth-key", f"k={k}",
            "--synth-key", f"decomposition={decomposition}"]


# name, gpu, arguments of `warpsim run`. Sizes chosen so that the full simulation of each takes at most a few
# minutes on one core, and that most have more than 8 waves (the figure of merit) and one has few (simulated whole).
# The H100 GEMMs one CTA per tile (waves) and persistent (the default there: sampled by rounds).
CASES = [
    ("h100 gemm 8192x8192x256 bf16", "h100_sxm", gemm("8192x8192x256", "data_parallel")),
    ("h100 gemm 8192x8192x1024 bf16", "h100_sxm", gemm("8192x8192x1024", "data_parallel")),
    ("h100 gemm 16384x4096x512 bf16", "h100_sxm", gemm("16384x4096x512", "data_parallel")),
    ("h100 gemm 4096x4096x1024 bf16 (few waves)", "h100_sxm", gemm("4096x4096x1024", "data_parallel")),
    ("h100 gemm 8192x8192x2048 bf16 persistent", "h100_sxm", gemm("8192x8192x2048", "persistent")),
    ("h100 gemm 8192x8192x8192 bf16 persistent", "h100_sxm", gemm("8192x8192x8192", "persistent")),
    ("a100 gemm 8192x8192x256 bf16", "a100_sxm", ["--gemm", "8192x8192x256"]),
    ("a100 gemm 8192x4096x1024 bf16", "a100_sxm", ["--gemm", "8192x4096x1024"]),
    # Decode GEMMs and the paged decode attention of an LLM step have 1-2 waves on a full GPU (never sampled): the
    # decode attention on a 4-SM H100 stands in for the kind (16 waves of long CTAs).
    ("h100 (4 SMs) decode attention b16 h8 kv2048 d128", "h100_sxm",
     ["--synth", "attention", "--synth-key", "variant=decode", "--synth-key", "batch=16", "--synth-key", "heads=8",
      "--synth-key", "kv_heads=8", "--synth-key", "seqlen_q=1", "--synth-key", "seqlen_kv=2048",
      "--synth-key", "head_dim=128", "--synth-key", "causal=false",
      "--set", "sm.count=4", "--set", "noc.gpcs=2", "--set", "l2.partitions=2", "--set", "l2.slices=4",
      "--set", "hbm.channels=4"]),
    ("h100 rmsnorm 65536x2048 bf16", "h100_sxm",
     ["--synth", "rmsnorm", "--synth-key", "rows=65536", "--synth-key", "cols=2048"]),
    ("h100 softmax 262144x1024 bf16", "h100_sxm",
     ["--synth", "softmax", "--synth-key", "rows=262144", "--synth-key", "cols=1024"]),
]


def decode_attention(batch, heads, kv_heads, kv):
    return ["--synth", "attention", "--synth-key", "variant=decode", "--synth-key", f"batch={batch}",
            "--synth-key", f"heads={heads}", "--synth-key", f"kv_heads={kv_heads}", "--synth-key", "seqlen_q=1",
            "--synth-key", f"seqlen_kv={kv}", "--synth-key", "head_dim=128"]


# SM subsetting: the kernels of an LLM step at full GPU size (few waves, where wave sampling cannot help), and
# kernels whose CTAs share data in the L2 (GEMMs), where a subset's fewer concurrent CTAs change the reuse.
SUBSET_CASES = [
    ("h100 gemm 4096x4096x4096 bf16", "h100_sxm", gemm("4096x4096x4096", "data_parallel")),
    ("h100 gemm 4096x4096x4096 bf16 persistent", "h100_sxm", gemm("4096x4096x4096", "persistent")),
    ("h100 decode gemm 64x10240x8192 bf16", "h100_sxm", ["--gemm", "64x10240x8192"]),
    ("h100 decode gemm 64x28672x4096 bf16", "h100_sxm", ["--gemm", "64x28672x4096"]),
    ("h100 decode attention b32 h32/8 kv4096 d128", "h100_sxm", decode_attention(32, 32, 8, 4096)),
    ("h100 rmsnorm 64x8192 bf16 (vllm, residual)", "h100_sxm",
     ["--synth", "rmsnorm", "--synth-key", "rows=64", "--synth-key", "cols=8192", "--synth-key", "kernel=vllm",
      "--synth-key", "residual=true"]),
    ("h100 stream copy 256 MiB", "h100_sxm", ["--synth", "stream", "--synth-key", "op=copy", "--synth-key", "bytes=256MiB"]),
    ("h100 softmax 4096x8192 bf16", "h100_sxm", ["--synth", "softmax", "--synth-key", "rows=4096", "--synth-key", "cols=8192"]),
    ("a100 gemm 4096x4096x2048 bf16", "a100_sxm", ["--gemm", "4096x4096x2048"]),
    ("a100 decode attention b32 h32/8 kv4096 d128", "a100_sxm", decode_attention(32, 32, 8, 4096)),
    ("a100 stream triad 256 MiB", "a100_sxm", ["--synth", "stream", "--synth-key", "op=triad", "--synth-key", "bytes=256MiB"]),
]


def run(warpsim, gpu, workload, mode_args, sets, out):
    args = [warpsim, "run", "--gpu", gpu, *workload, *mode_args, "--driver", "plain", "--out", str(out),
            "--no-progress", "-q"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return json.loads((out / "stats.json").read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warpsim", required=True)
    ap.add_argument("--only", default="", help="only cases whose name contains this")
    ap.add_argument("--set", action="append", default=[], help="a config override for both runs (repeatable)")
    ap.add_argument("--subset", type=int, default=0, help="SM subsetting: 1/N of the GPU against all of it")
    args = ap.parse_args()
    if args.subset:
        cases, full_args = SUBSET_CASES, ["--sample", "off", "--subset", "1"]
        estimate_args = ["--sample", "off", "--subset", str(args.subset)]
    else:
        cases, full_args, estimate_args = CASES, ["--sample", "off"], ["--sample", "waves"]
    print("| kernel | waves | CTAs simulated / total | time full (us) | time sampled (us) | time error | "
          "DRAM bytes error | energy error | wall full (s) | wall sampled (s) | speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for name, gpu, workload in cases:
        if args.only not in name:
            continue
        with tempfile.TemporaryDirectory() as d:
            full = run(args.warpsim, gpu, workload, full_args, args.set, pathlib.Path(d) / "full")
            sampled = run(args.warpsim, gpu, workload, estimate_args, args.set, pathlib.Path(d) / "estimate")
        t_full, t_sampled = full["total_time_us"], sampled["total_time_us"]
        err = (t_sampled - t_full) / t_full
        sims = [k.get("sampling") for k in sampled["kernels"]]
        simulated = sum(s["simulated_ctas"] if s else 0 for s in sims)
        total = sum(s["total_ctas"] if s else 0 for s in sims)
        waves = max((s["waves"] for s in sims if s), default=0.0)
        ctas = f"{simulated} / {total}" if total else "whole"
        waves_text = f"{waves:.1f}" if waves else "-"
        w_full, w_sampled = full["sim"]["wall_s"], sampled["sim"]["wall_s"]

        def total_of(result, field):
            return sum(field(k) for k in result["kernels"])

        def rel(field):
            a, b = total_of(full, field), total_of(sampled, field)
            return f"{100 * (b - a) / a:+.1f}%" if a else "-"

        dram = rel(lambda k: k["dram_bytes_read"] + k["dram_bytes_written"])
        energy = rel(lambda k: k["energy"]["joules"] if k.get("energy") else 0.0)
        print(f"| {name} | {waves_text} | {ctas} | {t_full:.2f} | {t_sampled:.2f} | {100 * err:+.2f}% | {dram} | "
              f"{energy} | {w_full:.1f} | {w_sampled:.1f} | {w_full / max(w_sampled, 1e-9):.1f}x |", flush=True)
        worst = max(worst, abs(err))
    print(f"\nlargest |error| {100 * worst:.2f}%")


if __name__ == "__main__":
    main()
