#!/usr/bin/env python3
"""PyTorch-profiler trace of a randomly initialised Llama (built from its config; nothing is downloaded):
one prefill and a few decode steps, exported as a Chrome/Perfetto trace (gzip) for warpsim's captured-trace and
whole-model work. Kernel times are the hardware's; the weights are random, which does not change the kernels.

    python3 llama_profile.py OUT_DIR [--layers N] [--prompt T] [--decode D] [--batch B]
"""
import argparse
import gzip
import json
import os
import shutil
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=32)
ap.add_argument("--prompt", type=int, default=2048)
ap.add_argument("--decode", type=int, default=8)
ap.add_argument("--batch", type=int, default=1)
args = ap.parse_args()

# Llama-3-8B's published architecture (config.json of meta-llama/Meta-Llama-3-8B).
cfg = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=args.layers,
                  num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192, rope_theta=500000.0,
                  rms_norm_eps=1e-5, torch_dtype="bfloat16", attn_implementation="sdpa")
torch.manual_seed(0)
with torch.device("cuda"):
    model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
ids = torch.randint(0, cfg.vocab_size, (args.batch, args.prompt), device="cuda")


def step():
    with torch.no_grad():
        out = model(ids, use_cache=True)
        past = out.past_key_values
        tok = out.logits[:, -1:].argmax(-1)
        for _ in range(args.decode):
            out = model(tok, past_key_values=past, use_cache=True)
            past = out.past_key_values
            tok = out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()


step()  # warm-up
t0 = time.time()
step()
wall = time.time() - t0
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    step()
raw = os.path.join(args.out, "llama3_8b_trace.json")
prof.export_chrome_trace(raw)
with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=9) as g:
    shutil.copyfileobj(f, g)
os.remove(raw)
meta = dict(model="Llama-3-8B architecture, random weights", layers=args.layers, batch=args.batch, prompt=args.prompt,
            decode_steps=args.decode, dtype="bf16", attn="sdpa", wall_s_unprofiled=wall, torch=torch.__version__,
            gpu=torch.cuda.get_device_name(0), date=time.strftime("%Y-%m-%d"))
json.dump(meta, open(os.path.join(args.out, "llama3_8b_trace.meta.json"), "w"), indent=1)
print("LLAMA", meta, flush=True)
