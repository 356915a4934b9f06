#!/usr/bin/env python3
"""Turns torch_bench.py and attn_profile.py measurements into a warpsim reference file (validation/README.md).

    python3 tools/hw_bench/make_reference.py validation/data/h100_sxm_2026-11-23 validation/data/h100_sxm_2026-11-24 \
        > validation/h100_measured.yaml
    python3 tools/hw_bench/make_reference.py validation/data/h200_2026-11-24 > validation/h200_measured.yaml

Every case names the measurement it comes from (file and id), the tool, the GPU and the date; the SM clock that
nvidia-smi sampled while that section of the benchmark ran is given in the note, not applied: the configs keep
their sourced clocks, and how far a sustained clock falls below them under load is part of what is compared.
Attention cases come from an attn_profile.json where one of the folders has it: the kernels' own durations from
the PyTorch profiler, which leave out the host time between calls that torch_bench's CUDA events include (about
40 us per call, 14% of a 265 us FA2 forward); torch_bench's attention figures are used only for cases it lacks.
"""
import json
import os
import re
import sys

folders = sys.argv[1:]
root = os.path.join(os.path.dirname(__file__), "..", "..")
# Every torch_bench*.json of the folders is one run; a case measured in several runs takes the median of its runs
# (kernels that start from an idle clock, or whose library heuristics vary, differ from run to run).
runs = [json.load(open(os.path.join(folder, f))) for folder in folders for f in sorted(os.listdir(folder))
        if f.startswith("torch_bench") and f.endswith(".json")]
data = dict(env=runs[0]["env"], date=runs[0]["date"], results=[])
by_id = {}
for run in runs:
    for r in run["results"]:
        by_id.setdefault(r["id"], []).append(r)
for rid, rs in by_id.items():
    rs = sorted(rs, key=lambda r: r["value"])
    mid = dict(rs[len(rs) // 2])
    if len(rs) > 1:
        mid["conditions"] += f"; median of {len(rs)} runs ({rs[0]['value']:.4g} to {rs[-1]['value']:.4g} {mid['unit']})"
    data["results"].append(mid)
env, date = data["env"], data["date"]
model = data["results"][0]["id"].split(".")[0]  # torch_bench.py starts every id with the GPU's model, "h100"
gpu_config = {"h100": "h100_sxm", "h200": "h200_sxm", "a100": "a100_sxm"}[model]
bench_folder = next(f for f in folders if any(n.startswith("torch_bench") for n in os.listdir(f)))
rel = os.path.relpath(bench_folder, root) + "/torch_bench*.json"
clock = {r["id"].split(".")[1]: r["value"] for r in data["results"] if r["id"].endswith(".clock")}  # medians over runs
tool = (f"measured on {env['gpu']} ({env['sms']} SMs), PyTorch {env['torch']} (CUDA {env['cuda']}, cuDNN "
        f"{env['cudnn']}), CUDA-event median times, {date} (tools/hw_bench/torch_bench.py)")

# Kernel-only attention times (attn_profile.py): FA2's forward kernel; its backward's own kernels (dot(dO, O), the
# dq/dk/dv kernel, the dq conversion), without the two copies PyTorch's SDPA backward adds around them (about 97 us
# each on the H100, the same for every case: glue, not FA2); cuDNN's forward kernel.
profiled = {}
for folder in folders:
    path = os.path.join(folder, "attn_profile.json")
    if not os.path.exists(path):
        continue
    prof = json.load(open(path))
    prof_rel = os.path.relpath(path, root)
    prof_date = os.path.basename(os.path.normpath(folder)).rsplit("_", 1)[-1]
    prof_tool = (f"measured on {prof['gpu']} ({prof['sms']} SMs), PyTorch {prof['torch']}, kernel durations from the "
                 f"PyTorch profiler (median of 10 calls), {prof_date} (tools/hw_bench/attn_profile.py)")
    for r in prof["results"]:
        flops = 4 * r["batch"] * r["heads"] * r["seqlen"] ** 2 * r["head_dim"] / (2 if r["causal"] else 1)
        base = f"{model}.attn.{r['backend']}"
        fwd = sum(k["median_us"] * k["calls"] for n, k in r["fwd_kernels"].items() if "copy" not in n)
        found = {f"{base}.fwd_{r['case']}": (fwd, flops, "forward kernel")}
        if "fwd_bwd_kernels" in r:
            bwd = sum(k["median_us"] * k["calls"] for n, k in r["fwd_bwd_kernels"].items() if "flash_bwd" in n)
            found[f"{base}.bwd_{r['case']}"] = (bwd, 2.5 * flops, "backward kernels (dot_do_o, dq_dk_dv, convert_dq), "
                                                "SDPA's copies excluded; 2.5 x fwd FLOPs")
            found[f"{base}.fwdpbwd_{r['case']}"] = (fwd + bwd, 3.5 * flops, "forward + backward kernels, SDPA's copies "
                                                    "excluded; 3.5 x fwd FLOPs")
        for rid, (us, fl, what) in found.items():
            profiled[rid] = dict(value=fl / us / 1e6, time_us=us, tool=prof_tool, rel=prof_rel,
                                 conditions=f"SDPA {r['backend']} backend, fp16, hidden 2048, batch {r['batch']}, heads "
                                            f"{r['heads']}, {'causal' if r['causal'] else 'noncausal'}; {what}")
known = {r["id"] for r in data["results"]}
data["results"] += [dict(id=rid, unit="TFLOPS", **v) for rid, v in profiled.items() if rid not in known]
for r in data["results"]:
    if r["id"] in profiled:
        r.update(profiled[r["id"]])

sampled = ", ".join(f"{name} {clock[key]:.0f} MHz" for name, key in (("gemm", "gemm"), ("attention", "attn"), ("ops", "op"))
                    if key in clock)
print(f"""# Kernel results measured on a real {env['gpu']} by tools/hw_bench/torch_bench.py on {date}, as warpsim
# reference cases (do not edit by hand; generated by tools/hw_bench/make_reference.py from
# {' '.join(os.path.relpath(f, root) for f in folders)}).
# They validate the model and are never fitted: mechanisms are fitted from microbenchmarks.
#   gemm       cuBLAS/cuBLASLt through torch.matmul (bf16, fp16, tf32 with fp32 inputs), torch._scaled_mm (fp8 e4m3,
#              bf16 out), torch._int_mm (int8 -> int32); "TN" (B stored N x K), TFLOP/s = 2*m*n*k / time.
#   attention  SDPA's FlashAttention-2 backend (PyTorch's copy of FA2) and its cuDNN backend (a Hopper-native fused
#              attention; compared with warpsim's fa3 variant, the closest design it models). The FA2 benchmark
#              setup: hidden 2048, batch = 16384 / seqlen, heads = 2048 / head_dim, fp16; TFLOP/s counted as the
#              FlashAttention papers count them (fwd 4*b*h*s*s*d, half when causal; bwd 2.5x fwd; fwd+bwd 3.5x).
#              Where attn_profile.json has the case: the kernels' own durations (PyTorch profiler), FA2's bwd =
#              its three backward kernels; otherwise bwd time = (fwd+bwd) time - fwd time (CUDA events).
#              decode: SDPA's default backend, one query per sequence over a contiguous KV cache, 32 query heads over 8 KV heads (GQA), head_dim 128; GB/s = K+V bytes / time.
#   ops        torch operators on fp16 rows x cols; GB/s counts each input and output once.
# SM clocks sampled by nvidia-smi (50 ms) while each section ran (median): {sampled}
# (configs/{gpu_config}.yaml runs at 1830 MHz; kernel-profiled attention: see the data folder's README).
""")


def case(r, workload, metric, measured, category, note):
    cid = r["id"]
    wl = ", ".join(f"{k}: {v}" for k, v in workload.items())
    print(f"- id: {cid}\n  gpu: {gpu_config}\n  workload: {{{wl}}}\n  metric: {metric}\n  measured: {measured:.4g}")
    print(f"  source: \"{r.get('tool', tool)}; {r.get('rel', rel)} id {cid}\"\n  category: {category}\n  note: \"{note}\"\n")


dtype_name = {"bf16": "bf16", "fp16": "fp16", "tf32": "tf32", "fp8_e4m3": "fp8", "int8": "int8"}
for r in data["results"]:
    rid, v = r["id"], r["value"]
    if m := re.fullmatch(rf"{model}\.gemm\.(\w+)\.m(\d+)n(\d+)k(\d+)", rid):
        dt, mm, n, k = m.group(1), *map(int, m.group(2, 3, 4))
        case(r, dict(kind="gemm", m=mm, n=n, k=k, dtype=dtype_name[dt]), "achieved_tflops", v, "gemm",
             f"{r['conditions']}; {r['time_us']:.1f} us per call")
    elif m := re.fullmatch(rf"{model}\.attn\.(fa2|cudnn)\.(fwd|bwd|fwdpbwd)_(causal|noncausal)_hdim(\d+)\.s(\d+)", rid):
        backend, direction, causal = m.group(1, 2, 3)
        hdim, s = map(int, m.group(4, 5))
        wl = dict(kind="attention", variant="fa2" if backend == "fa2" else "fa3", batch=16384 // s,
                  heads=2048 // hdim, seqlen_q=s, seqlen_kv=s, head_dim=hdim, causal=str(causal == "causal").lower(),
                  dtype="fp16", direction="fwd_bwd" if direction == "fwdpbwd" else direction)
        if backend == "cudnn" and direction != "fwd":
            continue  # warpsim's fa3 variant is forward-only (FlashAttention-3's published kernel is the forward)
        case(r, wl, "achieved_tflops", v, "attention", f"{r['conditions']}; {r['time_us']:.1f} us per call")
    elif m := re.fullmatch(rf"{model}\.attn\.decode_sdpa\.b(\d+)\.kv(\d+)", rid):
        b, s = map(int, m.group(1, 2))
        wl = dict(kind="attention", variant="decode", batch=b, heads=32, kv_heads=8, seqlen_q=1, seqlen_kv=s,
                  head_dim=128, dtype="fp16")
        case(r, wl, "time_us", r["time_us"], "attention",
             f"{r['conditions']}: {v:.0f} GB/s; contiguous cache (SDPA has no page table)")
    elif m := re.fullmatch(rf"{model}\.op\.(softmax|rmsnorm)\.(bf16|fp32)\.r(\d+)c(\d+)", rid):
        op, dt, rows, cols = m.group(1), m.group(2), *map(int, m.group(3, 4))
        case(r, dict(kind=op, rows=rows, cols=cols, dtype=dt), "time_us", r["time_us"], "ops",
             f"{r['conditions']}: {v:.0f} GB/s")
    elif m := re.fullmatch(rf"{model}\.op\.(\w+)\.r(\d+)c(\d+)", rid):
        op, rows, cols = m.group(1), *map(int, m.group(2, 3))
        if op in ("softmax", "layernorm", "rmsnorm"):
            wl = dict(kind=op, rows=rows, cols=cols, dtype="fp16")
        elif op in ("gelu", "add", "copy"):
            wl = dict(kind="elementwise", op=op, elements=rows * cols, dtype="fp16")
        else:
            continue  # silu alone is not one of the elementwise synthesizer's operators
        case(r, wl, "time_us", r["time_us"], "ops", f"{r['conditions']}: {v:.0f} GB/s")
