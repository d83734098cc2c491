#!/usr/bin/env python3
"""PyTorch's GPU time per kernel for the bench's GPT training step, to read beside tang's
(`examples/bench` prints tang's table for `gpt_char_6x384_T256_B64_step_fp32`).

The model and step are those of `../shared/bench/torch_anchors.py` (explicit attention,
fp32, TF32 off): 6 blocks, width 384, 6 heads, vocab 81, T 256, B 64, AdamW.
Usage (on a CUDA machine): python3 torch_gpt_profile.py [--sdpa] [--steps 2]
"""
import argparse, math
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

p = argparse.ArgumentParser()
p.add_argument("--sdpa", action="store_true", help="scaled_dot_product_attention instead of explicit")
p.add_argument("--steps", type=int, default=2)
args = p.parse_args()
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Block(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.h = h
        s.ln1 = nn.LayerNorm(d); s.qkv = nn.Linear(d, 3 * d); s.proj = nn.Linear(d, d)
        s.ln2 = nn.LayerNorm(d); s.fc = nn.Linear(d, 4 * d); s.fc2 = nn.Linear(4 * d, d)

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(C, dim=2)
        q, k, v = [z.view(B, T, s.h, C // s.h).transpose(1, 2) for z in (q, k, v)]
        if args.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(C // s.h)
            mask = torch.triu(torch.ones(T, T, device=x.device, dtype=torch.bool), 1)
            y = att.masked_fill(mask, float("-inf")).softmax(-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + s.proj(y)
        return x + s.fc2(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(s, V=81, T=256, d=384, L=6, h=6):
        super().__init__()
        s.tok = nn.Embedding(V, d); s.pos = nn.Embedding(T, d)
        s.blocks = nn.Sequential(*[Block(d, h) for _ in range(L)])
        s.ln = nn.LayerNorm(d); s.head = nn.Linear(d, V, bias=False)

    def forward(s, idx):
        x = s.tok(idx) + s.pos(torch.arange(idx.shape[1], device=idx.device))
        return s.head(s.ln(s.blocks(x)))


gpt = GPT().to(dev)
opt = torch.optim.AdamW(gpt.parameters(), lr=1e-3)
idx = torch.randint(0, 81, (64, 256), device=dev)
tgt = torch.randint(0, 81, (64, 256), device=dev)


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(gpt(idx).view(-1, 81), tgt.view(-1))
    loss.backward()
    opt.step()


for _ in range(5):
    step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
print(f"PyTorch GPT step, {args.steps} steps profiled ({'sdpa' if args.sdpa else 'explicit attention'}):")
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30, max_name_column_width=90))
