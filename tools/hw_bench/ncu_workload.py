#!/usr/bin/env python3
"""A few library kernels, each launched once after a warm-up, for Nsight Compute to profile (ncu_run.sh).

The launch order is fixed and printed, so that the export's rows can be mapped to problem shapes
(tools/hw_bench/ncu_map.yaml; warpsim validate --ncu).
"""
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = True
dev = "cuda"


def gemm(dtype, m, n, k):
    if dtype == "fp8":
        a = torch.zeros(m, k, device=dev).to(torch.float8_e4m3fn)
        b = torch.zeros(n, k, device=dev).to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=dev)
        return lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    td = dict(bf16=torch.bfloat16, fp16=torch.float16, tf32=torch.float32)[dtype]
    a = torch.randn(m, k, device=dev, dtype=td)
    b = torch.randn(n, k, device=dev, dtype=td)
    return lambda: torch.matmul(a, b.t())


def attention(s, hdim, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    batch, heads = 16384 // s, 2048 // hdim
    q, k, v = (torch.randn(batch, heads, s, hdim, device=dev, dtype=torch.float16) for _ in range(3))
    def fn():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return fn


def rows(op, r, c):
    x = torch.randn(r, c, device=dev, dtype=torch.float16)
    w = torch.ones(c, device=dev, dtype=torch.float16)
    return dict(softmax=lambda: torch.softmax(x, -1), layernorm=lambda: F.layer_norm(x, (c,), w, w),
                rmsnorm=lambda: F.rms_norm(x, (c,), w), silu=lambda: F.silu(x), add=lambda: x + x)[op]


work = [("gemm bf16 4096^3", gemm("bf16", 4096, 4096, 4096)), ("gemm bf16 8192^3", gemm("bf16", 8192, 8192, 8192)),
        ("gemm fp16 8192^3", gemm("fp16", 8192, 8192, 8192)), ("gemm tf32 4096^3", gemm("tf32", 4096, 4096, 4096)),
        ("gemm fp8 8192^3", gemm("fp8", 8192, 8192, 8192)), ("gemm bf16 16x4096x4096", gemm("bf16", 16, 4096, 4096)),
        ("gemm bf16 128x4096x4096", gemm("bf16", 128, 4096, 4096)),
        ("fa2 fwd s4096 hdim128", attention(4096, 128, False)), ("fa2 fwd causal s4096 hdim128", attention(4096, 128, True)),
        ("softmax 16384x4096", rows("softmax", 16384, 4096)), ("layernorm 16384x4096", rows("layernorm", 16384, 4096)),
        ("rmsnorm 16384x4096", rows("rmsnorm", 16384, 4096)), ("silu 16384x4096", rows("silu", 16384, 4096)),
        ("add 16384x4096", rows("add", 16384, 4096))]
for name, fn in work:
    fn()  # warm-up (cuBLAS heuristics, handles) outside the profiled range
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
for i, (name, fn) in enumerate(work):
    print(f"LAUNCH {i} {name}", flush=True)
    fn()
    torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
