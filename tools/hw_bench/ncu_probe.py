#!/usr/bin/env python3
"""Workloads for Nsight Compute probes (device_run.sh parts `attnsass` and `clockncu`); profiled range only.

    ncu_probe.py attn HDIM CAUSAL(0|1) SEQLEN   one SDPA FlashAttention-2 fwd+bwd (after two unprofiled calls), for
                                                the per-instruction SASS page of the forward and backward kernels
    ncu_probe.py clocks                          small-M bf16 GEMMs (M = 64, 128, 256; N = K = 4096) in three clock
                                                states: after 3 s idle, after 1 s of 8192^3 GEMMs, after 6 s of them
                                                (power-limited). With sm__ / lts__ / dram__cycles_elapsed.avg.per_second
                                                this says whether the L2 clock follows the SM clock, and what the
                                                small-M GEMMs' L2 traffic is (hits, fabric crossings, DRAM bytes)
The launch order is printed (LAUNCH lines) so an export's rows can be named.
"""
import sys
import time

import torch
import torch.nn.functional as F

dev = "cuda"


def attn(hdim, causal, s):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    batch, heads = 16384 // s, 2048 // hdim
    q, k, v = (torch.randn(batch, heads, s, hdim, device=dev, dtype=torch.float16, requires_grad=True)
               for _ in range(3))
    dout = torch.randn(batch, heads, s, hdim, device=dev, dtype=torch.float16)
    def fb():
        q.grad = k.grad = v.grad = None
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(dout)
    fb(); fb()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    print(f"LAUNCH fa2 fwd+bwd hdim{hdim} {'causal' if causal else 'noncausal'} s{s}", flush=True)
    fb()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def clocks():
    gemms = {m: (torch.randn(m, 4096, device=dev, dtype=torch.bfloat16),
                 torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)) for m in (64, 128, 256)}
    big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for a, b in gemms.values():
        torch.matmul(a, b.t())  # cuBLAS heuristics and handles outside the profiled range
    torch.matmul(big, big)
    torch.cuda.synchronize()
    for state, load_s in (("idle3s", 0.0), ("load1s", 1.0), ("load6s", 6.0)):
        if load_s == 0.0:
            time.sleep(3.0)
        else:
            t0 = time.time()
            while time.time() - t0 < load_s:
                torch.matmul(big, big)
                torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for m, (a, b) in gemms.items():
            print(f"LAUNCH {state} gemm bf16 {m}x4096x4096", flush=True)
            torch.matmul(a, b.t())
            torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    if sys.argv[1] == "attn":
        attn(int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]))
    elif sys.argv[1] == "clocks":
        clocks()
    else:
        sys.exit(f"ncu_probe.py: unknown workload {sys.argv[1]!r} (expected attn or clocks)")
