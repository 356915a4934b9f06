#!/usr/bin/env python3
"""Kernel-level measurements on a real GPU with PyTorch, for warpsim's validation references.

Times library kernels (cuBLAS GEMMs per data type, FlashAttention-2 and cuDNN attention through SDPA, decode
attention, memory-bound operators, copies, launch overhead) with CUDA events, and samples the SM clock and power
with nvidia-smi while they run, because a simulated time is only comparable at the clock the GPU really held.
Every figure is printed as `RESULT <id> <value> <unit> <conditions>` and written to <out>/torch_bench.json.

These are kernel results: they validate warpsim, they are never fitted (fit mechanisms from microbenchmarks).

    python3 tools/hw_bench/torch_bench.py OUT_DIR [--quick]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
# Result ids start with the GPU's model, lower case ("h100", "h200"), from the device name.
_model = re.search(r"\b([A-Z]\d{2,4})\b", torch.cuda.get_device_name(0)) if torch.cuda.is_available() else None
GPU = _model.group(1).lower() if _model else "gpu"
QUICK = "--quick" in sys.argv
results = []


def record(rid, value, unit, conditions, **extra):
    results.append(dict(id=rid, value=value, unit=unit, conditions=conditions, **extra))
    print(f"RESULT {rid} {value:.6g} {unit} {conditions}", flush=True)


class ClockSampler:
    """nvidia-smi in the background, 50 ms period: SM clock, power and temperature while a section runs."""

    def __init__(self, tag):
        self.tag = tag
        self.path = os.path.join(OUT, f"clocks_{tag}.csv")

    def __enter__(self):
        self.f = open(self.path, "w")
        self.p = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                                   "clocks_throttle_reasons.active", "--format=csv,noheader,nounits", "-lms", "50"],
                                  stdout=self.f, stderr=subprocess.DEVNULL)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        self.p.terminate()
        self.p.wait()
        self.f.close()
        clocks, powers = [], []
        for line in open(self.path):
            parts = [x.strip() for x in line.split(",")]
            try:
                clocks.append(float(parts[1]))
                powers.append(float(parts[3]))
            except (ValueError, IndexError):
                pass
        self.clock_median = statistics.median(clocks) if clocks else float("nan")
        self.clock_min = min(clocks) if clocks else float("nan")
        self.power_max = max(powers) if powers else float("nan")
        print(f"CLOCKS {self.tag}: SM clock median {self.clock_median} MHz, min {self.clock_min} MHz, "
              f"max power {self.power_max} W, {len(clocks)} samples", flush=True)


def time_fn(fn, iters=20, warmup=5, min_seconds=0.3):
    """Median time of one call in seconds (CUDA events around each call; enough calls for min_seconds)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    fn()
    torch.cuda.synchronize()
    one = max(time.time() - t0, 1e-6)
    iters = max(iters, min(2000, int(min_seconds / one)))
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return statistics.median(times)


def env():
    p = torch.cuda.get_device_properties(0)
    info = dict(torch=torch.__version__, cuda=torch.version.cuda, gpu=p.name, sms=p.multi_processor_count,
                memory_gib=p.total_memory / 2**30, cudnn=torch.backends.cudnn.version())
    try:
        info["nvidia_smi"] = subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,POWER,PERFORMANCE"], capture_output=True,
                                            text=True).stdout
    except OSError:
        pass
    print("ENV", {k: v for k, v in info.items() if k != "nvidia_smi"}, flush=True)
    return info


def warm_up(seconds=2.0):
    """Large GEMMs until the clock has left its idle state: the first timed case must not pay the ramp."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        torch.matmul(a, a)
        torch.cuda.synchronize()


def gemms():
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192)]
    llm = [(16, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096), (16, 14336, 4096), (4096, 30522, 4096),
           (2048, 4096, 4096), (4096, 14336, 4096)]
    torch.backends.cuda.matmul.allow_tf32 = True
    with ClockSampler("gemm") as clk:
        warm_up()
        for dtype in ["bf16", "fp16", "tf32", "fp8_e4m3", "int8"]:
            for (m, n, k) in shapes + (llm if dtype in ("bf16", "fp8_e4m3") else []):
                try:
                    if dtype in ("bf16", "fp16", "tf32"):
                        td = dict(bf16=torch.bfloat16, fp16=torch.float16, tf32=torch.float32)[dtype]
                        a = torch.randn(m, k, device="cuda", dtype=td)
                        b = torch.randn(n, k, device="cuda", dtype=td)  # N x K: a Linear weight ("TN")
                        fn = lambda: torch.matmul(a, b.t())
                    elif dtype == "fp8_e4m3":
                        if k % 16 or n % 16:
                            continue
                        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
                        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
                        one = torch.tensor(1.0, device="cuda")
                        fn = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                    else:
                        if m <= 16:
                            continue
                        a = torch.randint(-8, 8, (m, k), device="cuda", dtype=torch.int8)
                        b = torch.randint(-8, 8, (n, k), device="cuda", dtype=torch.int8)
                        fn = lambda: torch._int_mm(a, b.t())
                    t = time_fn(fn)
                    record(f"{GPU}.gemm.{dtype}.m{m}n{n}k{k}", 2 * m * n * k / t / 1e12, "TFLOPS",
                           f"torch.matmul/_scaled_mm/_int_mm (cuBLAS/cuBLASLt), TN, median of CUDA-event times",
                           time_us=t * 1e6)
                    del a, b
                except Exception as ex:  # one unsupported data type must not lose the rest
                    print(f"SKIP gemm {dtype} {m}x{n}x{k}: {ex}", flush=True)
    results.append(dict(id=f"{GPU}.gemm.clock", value=clk.clock_median, unit="MHz", conditions="gemm section"))
    torch.cuda.empty_cache()


def attention():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as ex:
        print("SKIP attention:", ex)
        return
    backends = [("fa2", SDPBackend.FLASH_ATTENTION)]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(("cudnn", SDPBackend.CUDNN_ATTENTION))
    seqlens = [512, 1024, 2048, 4096, 8192, 16384] if not QUICK else [1024, 4096]
    with ClockSampler("attention") as clk:
        warm_up()
        for name, backend in backends:
            for hdim in (64, 128, 256):
                for causal in (False, True):
                    for s in seqlens:
                        batch, heads = 16384 // s, 2048 // hdim
                        q, k, v = (torch.randn(batch, heads, s, hdim, device="cuda", dtype=torch.float16,
                                               requires_grad=True) for _ in range(3))
                        flops = 4 * batch * heads * s * s * hdim / (2 if causal else 1)
                        try:
                            with sdpa_kernel(backend):
                                fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                t_f = time_fn(fwd, iters=10)
                                out = fwd()
                                dout = torch.randn_like(out)
                                def fb():
                                    # As flash-attention's benchmark_backward: without this, every call after the
                                    # first adds three gradient-accumulation kernels (q.grad += dq, ...) to the time.
                                    q.grad = k.grad = v.grad = None
                                    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                    o.backward(dout)
                                t_fb = time_fn(fb, iters=10)
                            cond = (f"SDPA {name} backend, fp16, hidden 2048, batch {batch}, heads {heads}, "
                                    f"{'causal' if causal else 'noncausal'}")
                            tag = f"{'causal' if causal else 'noncausal'}_hdim{hdim}.s{s}"
                            record(f"{GPU}.attn.{name}.fwd_{tag}", flops / t_f / 1e12, "TFLOPS", cond, time_us=t_f * 1e6)
                            record(f"{GPU}.attn.{name}.fwdpbwd_{tag}", 3.5 * flops / t_fb / 1e12, "TFLOPS",
                                   cond + "; fwd+bwd counted as 3.5 x fwd FLOPs", time_us=t_fb * 1e6)
                            bwd = t_fb - t_f
                            if bwd > 0:
                                record(f"{GPU}.attn.{name}.bwd_{tag}", 2.5 * flops / bwd / 1e12, "TFLOPS",
                                       cond + "; bwd = (fwd+bwd time) - fwd time, 2.5 x fwd FLOPs", time_us=bwd * 1e6)
                        except Exception as ex:
                            print(f"SKIP attention {name} hdim {hdim} s {s}: {str(ex).splitlines()[0]}", flush=True)
                        del q, k, v
        # Decode: one query token per sequence against a KV cache, GQA 32 query heads over 8 KV heads.
        for batch in (1, 8, 32, 64):
            for s in (1024, 4096, 16384):
                heads, kvh, hdim = 32, 8, 128
                q = torch.randn(batch, heads, 1, hdim, device="cuda", dtype=torch.float16)
                k = torch.randn(batch, kvh, s, hdim, device="cuda", dtype=torch.float16)
                v = torch.randn_like(k)
                try:
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                    t = time_fn(fn)
                    kv_bytes = 2 * batch * kvh * s * hdim * 2
                    record(f"{GPU}.attn.decode_sdpa.b{batch}.kv{s}", kv_bytes / t / 1e9, "GB/s",
                           f"SDPA default backend, q len 1, {heads} heads over {kvh} KV heads, hdim {hdim}, fp16; "
                           f"K+V bytes / time", time_us=t * 1e6)
                except Exception as ex:
                    print(f"SKIP decode b{batch} s{s}: {str(ex).splitlines()[0]}", flush=True)
                del q, k, v
    results.append(dict(id=f"{GPU}.attn.clock", value=clk.clock_median, unit="MHz", conditions="attention section"))
    torch.cuda.empty_cache()


def memory_ops():
    with ClockSampler("memory") as clk:
        for rows, cols in [(16384, 4096), (16384, 8192), (4096, 12288), (65536, 2048)]:
            x = torch.randn(rows, cols, device="cuda", dtype=torch.float16)
            nbytes = x.numel() * 2
            w = torch.ones(cols, device="cuda", dtype=torch.float16)
            ops = {
                "softmax": (lambda: torch.softmax(x, dim=-1), 2 * nbytes),
                "layernorm": (lambda: F.layer_norm(x, (cols,), w, w), 2 * nbytes),
                "add": (lambda: x + x, 3 * nbytes),
                "copy": (lambda: x.clone(), 2 * nbytes),
                "silu": (lambda: F.silu(x), 2 * nbytes),
                "gelu": (lambda: F.gelu(x), 2 * nbytes),
            }
            if hasattr(F, "rms_norm"):
                ops["rmsnorm"] = (lambda: F.rms_norm(x, (cols,), w), 2 * nbytes)
            for name, (fn, moved) in ops.items():
                try:
                    t = time_fn(fn)
                    record(f"{GPU}.op.{name}.r{rows}c{cols}", moved / t / 1e9, "GB/s",
                           f"torch {name}, fp16, rows x cols; bytes = inputs + outputs once", time_us=t * 1e6)
                except Exception as ex:
                    print(f"SKIP op {name}: {ex}", flush=True)
        for mib in (8, 32, 256, 2048):
            x = torch.empty(mib * 2**20, device="cuda", dtype=torch.uint8)
            y = torch.empty_like(x)
            t = time_fn(lambda: y.copy_(x))
            record(f"{GPU}.bw.copy.{mib}MiB", 2 * x.numel() / t / 1e9, "GB/s", "tensor copy_, read + write bytes / time",
                   time_us=t * 1e6)
    results.append(dict(id=f"{GPU}.op.clock", value=clk.clock_median, unit="MHz", conditions="memory section"))
    # Launch overhead: back-to-back tiny kernels (the per-call floor seen in operator measurements).
    x = torch.zeros(1, device="cuda")
    t = time_fn(lambda: x.add_(1), iters=2000)
    record(f"{GPU}.launch.tiny_kernel_event_time", t * 1e6, "us", "x.add_(1) on 1 element, CUDA events around one call")
    torch.cuda.synchronize()
    n = 5000
    t0 = time.time()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    record(f"{GPU}.launch.tiny_kernel_back_to_back", (time.time() - t0) / n * 1e6, "us",
           f"{n} x.add_(1) launched back to back from Python, wall time per kernel")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(100):
            x.add_(1)
    g.replay()
    torch.cuda.synchronize()
    t = time_fn(lambda: g.replay(), iters=50)
    record(f"{GPU}.launch.graph_kernel", t / 100 * 1e6, "us", "100 x.add_(1) captured in a CUDA graph, time per kernel")


def row_norms():
    """RMSNorm and softmax over rows of 4k-32k elements, bf16 and fp32, each tensor 512 MiB (10x the H100's L2):
    the memory-bound row operators of LLM inference, for the memory model's HBM-share check (issue 9)."""
    with ClockSampler("norms") as clk:
        for dtype, tag in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
            for cols in (4096, 8192, 16384, 32768):
                rows = (512 * 2**20) // (cols * torch.finfo(dtype).bits // 8)
                x = torch.randn(rows, cols, device="cuda", dtype=dtype)
                w = torch.ones(cols, device="cuda", dtype=dtype)
                nbytes = x.numel() * x.element_size()
                ops = {"softmax": lambda: torch.softmax(x, dim=-1)}
                if hasattr(F, "rms_norm"):
                    ops["rmsnorm"] = lambda: F.rms_norm(x, (cols,), w)
                for name, fn in ops.items():
                    try:
                        t = time_fn(fn)
                        record(f"{GPU}.op.{name}.{tag}.r{rows}c{cols}", 2 * nbytes / t / 1e9, "GB/s",
                               f"torch {name}, {tag}, rows x cols; bytes = input + output once", time_us=t * 1e6)
                    except Exception as ex:
                        print(f"SKIP norm {name} {tag} {cols}: {ex}", flush=True)
                del x, w
                torch.cuda.empty_cache()
    results.append(dict(id=f"{GPU}.norms.clock", value=clk.clock_median, unit="MHz", conditions="norms section"))


def main():
    os.makedirs(OUT, exist_ok=True)
    info = env()
    sections = [s for s in ("gemm", "attention", "memory", "norms") if s in sys.argv] or ["gemm", "attention", "memory"]
    for s in sections:
        t0 = time.time()
        dict(gemm=gemms, attention=attention, memory=memory_ops, norms=row_norms)[s]()
        print(f"SECTION {s} took {time.time() - t0:.1f} s", flush=True)
    name = "torch_bench.json" if len(sections) == 3 else f"torch_bench_{'_'.join(sections)}.json"
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(dict(env=info, date=time.strftime("%Y-%m-%d"), results=results), f, indent=1)


if __name__ == "__main__":
    main()
