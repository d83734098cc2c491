#!/usr/bin/env python3
"""PyTorch twin of the bench's recipe cases (`examples/examples/bench/recipe.rs`): one
training step of nanoGPT's shakespeare_char recipe as `train_char_gpt_torch.py` trains it
(no biases, tied head, exact GELU, dropout 0.2, AdamW betas 0.9/0.99 over two decay
groups, clipping at 1.0, the learning rate set every step), with nanoGPT's own choices for
speed: SDPA attention (dropout inside it) and fused AdamW; batches are windows of the Rust
book gathered on the GPU, as tang's `DeviceTokenBatcher` does.

    python3 examples/scripts/torch_gpt_recipe.py [--only SUBSTRING]

prints one line per case, `name: ms/step, ktok/s`, by the bench's names:
`gpt_recipe_6x384_T256_B64` and `gpt_recipe_12x768_T1024_B8`, each in fp32 (TF32 off), with
bf16 autocast (`_bf16_autocast`) and with fp16 autocast and a GradScaler (`_amp`, as tang's
`TrainerOptions::amp`), the median of 10 steps timed with CUDA events after 3 warm-up
steps.
"""
import argparse
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "data", "rust-book.txt"))
p.add_argument("--only", default="")
args = p.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"
DROPOUT = 0.2

text = open(args.data, encoding="utf-8").read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long, device=dev)
V = len(chars)


class Block(nn.Module):
    def __init__(s, c, heads):
        super().__init__()
        s.heads = heads
        s.ln_1 = nn.LayerNorm(c, bias=False)
        s.c_attn = nn.Linear(c, 3 * c, bias=False)
        s.attn_proj = nn.Linear(c, c, bias=False)
        s.ln_2 = nn.LayerNorm(c, bias=False)
        s.c_fc = nn.Linear(c, 4 * c, bias=False)
        s.mlp_proj = nn.Linear(4 * c, c, bias=False)

    def forward(s, x):
        b, t, c = x.shape
        q, k, v = [z.view(b, t, s.heads, c // s.heads).transpose(1, 2) for z in s.c_attn(s.ln_1(x)).split(c, 2)]
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT, is_causal=True)
        x = x + F.dropout(s.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c)), DROPOUT)
        return x + F.dropout(s.mlp_proj(F.gelu(s.c_fc(s.ln_2(x)))), DROPOUT)


class GPT(nn.Module):
    def __init__(s, layers, heads, c, block):
        super().__init__()
        s.wte = nn.Embedding(V, c)
        s.wpe = nn.Embedding(block, c)
        s.h = nn.ModuleList([Block(c, heads) for _ in range(layers)])
        s.ln_f = nn.LayerNorm(c, bias=False)

    def forward(s, idx):
        x = F.dropout(s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=dev)), DROPOUT)
        for b in s.h:
            x = b(x)
        return F.linear(s.ln_f(x), s.wte.weight)


def case(name, layers, heads, width, block, batch):
    torch.manual_seed(1337)
    m = GPT(layers, heads, width, block).to(dev)
    decay = [q for q in m.parameters() if q.dim() >= 2]
    no_decay = [q for q in m.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99), fused=True)
    offsets = torch.arange(block, device=dev)
    it = [0]

    # fp16 autocast takes a GradScaler (PyTorch's AMP recipe: unscale, clip, step, update).
    scaler = torch.amp.GradScaler("cuda")

    def step(dt):
        lr = 1e-4 + 0.5 * (1.0 + math.cos(math.pi * min(it[0], 5000) / 5000)) * (1e-3 - 1e-4)
        for g in opt.param_groups:
            g["lr"] = lr
        ix = torch.randint(len(data) - block, (batch, 1), device=dev)
        x, y = data[ix + offsets], data[ix + 1 + offsets]
        with torch.autocast("cuda", dtype=dt or torch.float32, enabled=dt is not None):
            loss = F.cross_entropy(m(x).view(-1, V), y.view(-1))
        if dt == torch.float16:
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
        opt.zero_grad(set_to_none=True)
        it[0] += 1

    for suffix, dt in [("", None), ("_bf16_autocast", torch.bfloat16), ("_amp", torch.float16)]:
        if args.only not in name + suffix:
            continue
        for _ in range(3):
            step(dt)
        torch.cuda.synchronize()
        ts = []
        for _ in range(10):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            step(dt)
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        ts.sort()
        ms = ts[len(ts) // 2]
        print(f"{name}{suffix}: {ms:.2f} ms/step, {batch * block / ms:.1f} ktok/s, "
              f"max memory {torch.cuda.max_memory_allocated() / 1e9:.2f} GB", flush=True)
    del m, opt
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}, vocab {V}")
case("gpt_recipe_6x384_T256_B64", 6, 6, 384, 256, 64)
case("gpt_recipe_12x768_T1024_B8", 12, 12, 768, 1024, 8)
