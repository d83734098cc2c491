#!/usr/bin/env python3
"""A GPT-2 checkpoint written by tang's `Gpt::save_pretrained`, loaded by transformers: its
logits on the token ids tang ran against the logits tang computed.

Usage: check_hf_roundtrip.py HF_DIR LOGITS [--tol 1e-4]

HF_DIR   the directory `save_pretrained` wrote (config.json + model.safetensors)
LOGITS   a safetensors file with `input_ids` [B, T] (int64) and tang's `logits` [B, T, V]
         (finetune_gpt2 writes both: OUT/hf and OUT/hf_logits.safetensors)

Prints the largest |tang - transformers| and exits 1 when it is above --tol.
"""
import argparse, sys
import torch
from safetensors.torch import load_file
from transformers import GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("hf_dir"); ap.add_argument("logits"); ap.add_argument("--tol", type=float, default=1e-4)
a = ap.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda" if torch.cuda.is_available() else "cpu"
m = GPT2LMHeadModel.from_pretrained(a.hf_dir, dtype=torch.float32).to(dev).eval()
io = load_file(a.logits)
ids, want = io["input_ids"].to(dev), io["logits"].to(dev)
with torch.no_grad():
    got = m(input_ids=ids).logits
assert got.shape == want.shape, f"shapes differ: transformers {tuple(got.shape)}, tang {tuple(want.shape)}"
diff = (got - want).abs().max().item()
scale = want.abs().max().item()
print(f"{a.hf_dir}: {sum(p.numel() for p in m.parameters()) / 1e6:.2f}M parameters, logits {tuple(want.shape)}, "
      f"max |tang - transformers| = {diff:.3e} (max |logit| {scale:.3g}, tolerance {a.tol:g}) on {dev}")
sys.exit(0 if diff <= a.tol else 1)
