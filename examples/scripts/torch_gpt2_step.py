#!/usr/bin/env python3
"""PyTorch's twin of tang's bench case `gpt2_124M_T1024_B8_step`: a GPT-2 small training step
(vocab 50257, 12 layers, 12 heads, width 768, biases, tanh GELU, tied head, dropout 0) at
T 1024 and batch 8: forward, cross-entropy, backward, fused AdamW (lr 6e-4, betas 0.9/0.95,
weight decay 0.1), in fp32 (TF32 off) with SDPA, in bf16 autocast, and in fp16 autocast with
a GradScaler (tang's `_amp` case); median of CUDA-event timed steps after a warm-up, and the
device memory: torch.cuda.max_memory_allocated (the
tensors' peak) and max_memory_reserved (what the caching allocator held, the counterpart of
tang's pool bytes), over the steps with parameters and optimizer state included.

Usage: torch_gpt2_step.py [--batch 8] [--block 1024] [--reps 10]
"""
import argparse, torch, torch.nn as nn, torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=8); ap.add_argument("--block", type=int, default=1024)
ap.add_argument("--reps", type=int, default=10)
a = ap.parse_args()
L, H, D, T, B, V = 12, 12, 768, a.block, a.batch, 50257
dev = "cuda"; torch.backends.cuda.matmul.allow_tf32 = False; torch.backends.cudnn.allow_tf32 = False

class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.ln_1, s.c_attn, s.c_proj = nn.LayerNorm(D), nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.ln_2, s.c_fc, s.mlp_proj = nn.LayerNorm(D), nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
    def forward(s, x):
        b, t, c = x.shape
        q, k, v = [z.view(b, t, H, c // H).transpose(1, 2) for z in s.c_attn(s.ln_1(x)).split(c, 2)]
        x = x + s.c_proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c))
        return x + s.mlp_proj(F.gelu(s.c_fc(s.ln_2(x)), approximate="tanh"))

class GPT2(nn.Module):
    def __init__(s):
        super().__init__()
        s.wte, s.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        s.h, s.ln_f = nn.ModuleList([Block() for _ in range(L)]), nn.LayerNorm(D)
    def forward(s, idx):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in s.h: x = b(x)
        return F.linear(s.ln_f(x), s.wte.weight)

m = GPT2().to(dev)
decay = [p for p in m.parameters() if p.dim() >= 2]; rest = [p for p in m.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                        lr=6e-4, betas=(0.9, 0.95), fused=True)
g = torch.Generator(device=dev).manual_seed(17)
ids = torch.randint(0, V, (B, T + 1), device=dev, generator=g)
x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

scaler = torch.amp.GradScaler("cuda")

def step(dt):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=dt or torch.float32, enabled=dt is not None):
        loss = F.cross_entropy(m(x).view(-1, V), y.view(-1))
    if dt == torch.float16:
        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    else:
        loss.backward(); opt.step()

n = sum(p.numel() for p in m.parameters())
for name, dt in [("fp32", None), ("bf16_autocast", torch.bfloat16),
                 ("fp16_autocast_gradscaler", torch.float16)]:
    for _ in range(3): step(dt)
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); ts = []
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); step(dt); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); ms = ts[len(ts) // 2]
    print(f"gpt2_124M_T{T}_B{B}_step {name} ({n / 1e6:.1f}M): {ms:.2f} ms/step, {B * T / ms:.1f} ktok/s, "
          f"max_memory_allocated {torch.cuda.max_memory_allocated() / 1e6:.1f} MB, "
          f"max_memory_reserved {torch.cuda.max_memory_reserved() / 1e6:.1f} MB", flush=True)
