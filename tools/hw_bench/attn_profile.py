#!/usr/bin/env python3
"""Per-kernel times of SDPA's FlashAttention-2 forward and backward, from the PyTorch profiler's kernel records.

torch_bench.py times whole calls with CUDA events, so its backward figure is (fwd+bwd) - fwd and includes
launch gaps and whatever else the call launches. Here each call runs under torch.profiler and the GPU kernels
are listed by name with their own durations: the forward kernel, and the backward's three kernels
(dot(dO, O), the main dq/dk/dv kernel, the dq conversion) apart. Gradients are reset to None before every
backward, as flash-attention's benchmark_backward does.

Same problem sizes as torch_bench.py (batch x seqlen = 16384 tokens, hidden 2048, fp16), head_dim 64, 128 and 256,
causal and not, 512-4096 tokens; also the forward of SDPA's cuDNN backend.

    python3 tools/hw_bench/attn_profile.py OUT_DIR [--quick]      -> OUT_DIR/attn_profile.json
"""
import json
import os
import statistics
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
QUICK = "--quick" in sys.argv
ITERS = 10


def kernel_times(fn, iters=ITERS):
    """{kernel name: median us per call}, and the median per-call sum of all kernels and kernel span."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
            torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    prof.export_chrome_trace(path)
    events = json.load(open(path)).get("traceEvents", [])
    os.unlink(path)
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    if not kernels:
        raise RuntimeError("the profiler recorded no kernels")
    per_call = len(kernels) // iters
    if per_call * iters != len(kernels):
        raise RuntimeError(f"{len(kernels)} kernels for {iters} calls")
    by_name, sums, spans = {}, [], []
    for i in range(iters):
        call = kernels[i * per_call:(i + 1) * per_call]
        for e in call:
            by_name.setdefault(e["name"], []).append(e["dur"])
        sums.append(sum(e["dur"] for e in call))
        spans.append(call[-1]["ts"] + call[-1]["dur"] - call[0]["ts"])
    return ({name: dict(median_us=statistics.median(d), calls=len(d) // iters) for name, d in by_name.items()},
            statistics.median(sums), statistics.median(spans))


def main():
    results = []
    seqlens = [512, 1024, 2048, 4096] if not QUICK else [1024]
    # FlashAttention-2 forward and backward; cuDNN's fused attention forward (what warpsim's fa3 variant is compared with)
    backends = [("fa2", SDPBackend.FLASH_ATTENTION, True)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION, False))
    for name, backend, with_bwd in backends:
        for hdim in (64, 128, 256):
            for causal in (False, True):
                for s in seqlens:
                    try:
                        results.append(profile_case(name, backend, with_bwd, hdim, causal, s))
                    except Exception as ex:  # a backend that refuses a shape is reported, not fatal
                        print(f"SKIP {name} hdim {hdim} causal {causal} s {s}: {str(ex).splitlines()[0]}", flush=True)
                    torch.cuda.empty_cache()
    p = torch.cuda.get_device_properties(0)
    json.dump(dict(gpu=p.name, sms=p.multi_processor_count, torch=torch.__version__, results=results),
              open(os.path.join(OUT, "attn_profile.json"), "w"), indent=1)


def profile_case(name, backend, with_bwd, hdim, causal, s):
    batch, heads = 16384 // s, 2048 // hdim
    q, k, v = (torch.randn(batch, heads, s, hdim, device="cuda", dtype=torch.float16, requires_grad=with_bwd)
               for _ in range(3))
    flops = 4 * batch * heads * s * s * hdim / (2 if causal else 1)
    tag = f"{'causal' if causal else 'noncausal'}_hdim{hdim}.s{s}"
    with sdpa_kernel(backend):
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        f_k, f_sum, f_span = kernel_times(fwd)
        row = dict(backend=name, case=tag, batch=batch, heads=heads, seqlen=s, head_dim=hdim, causal=causal,
                   fwd_kernels=f_k, fwd_kernel_us=f_sum, fwd_span_us=f_span, fwd_tflops=flops / f_sum / 1e6)
        line = f"RESULT {name}.{tag} fwd {f_sum:.1f} us ({row['fwd_tflops']:.1f} TFLOP/s)"
        if with_bwd:
            dout = torch.randn_like(fwd())
            def fwd_bwd():
                q.grad = k.grad = v.grad = None
                F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(dout)
            fb_k, fb_sum, fb_span = kernel_times(fwd_bwd)
            bwd_sum = fb_sum - f_sum
            row.update(fwd_bwd_kernels=fb_k, fwd_bwd_kernel_us=fb_sum, fwd_bwd_span_us=fb_span, bwd_kernel_us=bwd_sum,
                       bwd_tflops=2.5 * flops / bwd_sum / 1e6, fwd_bwd_tflops=3.5 * flops / fb_sum / 1e6)
            line += f" bwd {bwd_sum:.1f} us ({row['bwd_tflops']:.1f}) fwd+bwd kernels {fb_sum:.1f} us span {fb_span:.1f} us"
    print(line, flush=True)
    for kname, d in (row.get("fwd_bwd_kernels") or f_k).items():
        print(f"  {d['median_us']:9.1f} us x{d['calls']} {kname[:150]}", flush=True)
    return row


if __name__ == "__main__":
    main()
