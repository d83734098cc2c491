#!/usr/bin/env python3
"""PyTorch reference for `examples/train_char_gpt.rs`: nanoGPT's shakespeare_char recipe
on the Rust-book corpus, written out in full so that both sides train the same model on
the same split with the same hyper-parameters.

Recipe: 6 layers, 6 heads, 384 wide, block 256, batch 64, dropout 0.2, no biases, tied
token embedding and head, exact GELU, AdamW (betas 0.9/0.99, weight decay 0.1 on 2-D
parameters only, eps 1e-8), gradient clipping at 1.0, warmup 100 steps then cosine from
1e-3 to 1e-4 at 5,000 steps, evaluation of 200 batches every 250 steps, a 90/10
train/validation split in order. fp32 with TF32 off (tang trains in fp32).

    python3 examples/scripts/train_char_gpt_torch.py --out runs/torch-char-gpt

writes `metrics.jsonl` (one JSON object per line, the same fields as tang's trainer:
step, loss, val_loss, lr, ms_per_step, tokens_per_sec) and prints the best validation
loss and a sample of generated text.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "data", "rust-book.txt"))
p.add_argument("--out", default="runs/torch-char-gpt")
p.add_argument("--steps", type=int, default=5000)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--block", type=int, default=256)
p.add_argument("--layers", type=int, default=6)
p.add_argument("--heads", type=int, default=6)
p.add_argument("--width", type=int, default=384)
p.add_argument("--dropout", type=float, default=0.2)
p.add_argument("--eval-interval", type=int, default=250)
p.add_argument("--eval-iters", type=int, default=200)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda" if torch.cuda.is_available() else "cpu"

text = open(args.data, encoding="utf-8").read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split):
    d = train_data if split == "train" else val_data
    ix = torch.randint(len(d) - args.block, (args.batch,))
    x = torch.stack([d[i : i + args.block] for i in ix])
    y = torch.stack([d[i + 1 : i + 1 + args.block] for i in ix])
    return x.to(dev), y.to(dev)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c, 3 * c, bias=False)
        self.c_proj = nn.Linear(c, c, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_head = args.heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = [z.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for z in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.triu(torch.ones(T, T, device=x.device, dtype=torch.bool), 1)
        att = self.attn_dropout(att.masked_fill(mask, float("-inf")).softmax(dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c, 4 * c, bias=False)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c, c, bias=False)
        self.dropout = nn.Dropout(args.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's; absent here)."""

    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = LayerNorm(c), CausalSelfAttention(c), LayerNorm(c), MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        c = args.width
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, c), wpe=nn.Embedding(args.block, c), drop=nn.Dropout(args.dropout),
            h=nn.ModuleList([Block(c) for _ in range(args.layers)]), ln_f=LayerNorm(c)))
        self.lm_head = nn.Linear(c, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init)
        for name, q in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(q, mean=0.0, std=0.02 / math.sqrt(2 * args.layers))

    def _init(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, device=idx.device)))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, new_tokens, temperature=0.8, top_k=40):
        for _ in range(new_tokens):
            logits, _ = self(idx[:, -args.block :])
            logits = logits[:, -1, :] / temperature
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("inf")
            idx = torch.cat((idx, torch.multinomial(F.softmax(logits, dim=-1), 1)), dim=1)
        return idx


model = GPT(len(chars)).to(dev)
decay = [q for q in model.parameters() if q.dim() >= 2]
no_decay = [q for q in model.parameters() if q.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.99))


def get_lr(it, lr=1e-3, min_lr=1e-4, warmup=100, decay_iters=5000):
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay_iters:
        return min_lr
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


@torch.no_grad()
def estimate_loss():
    model.eval()
    out = {}
    for split in ("train", "val"):
        losses = torch.zeros(args.eval_iters)
        for k in range(args.eval_iters):
            _, loss = model(*get_batch(split))
            losses[k] = loss.item()
        out[split] = losses.mean().item()
    model.train()
    return out


os.makedirs(args.out, exist_ok=True)
log = open(os.path.join(args.out, "metrics.jsonl"), "w")
nparams = sum(q.numel() for q in model.parameters())
print(f"device {torch.cuda.get_device_name(0) if dev == 'cuda' else 'cpu'}, torch {torch.__version__}, "
      f"{nparams / 1e6:.2f}M parameters, vocab {len(chars)}, train {len(train_data)} val {len(val_data)} chars")
best_val = float("inf")
t0 = time.time()
for it in range(args.steps + 1):
    lr = get_lr(it)
    for g in opt.param_groups:
        g["lr"] = lr
    if it % args.eval_interval == 0 or it == args.steps:
        losses = estimate_loss()
        best_val = min(best_val, losses["val"])
        print(f"step {it}: train {losses['train']:.4f} val {losses['val']:.4f}", flush=True)
        log.write(json.dumps({"step": it, "loss": losses["train"], "val_loss": losses["val"], "lr": lr}) + "\n")
        t0 = time.time()
    if it == args.steps:
        break
    x, y = get_batch("train")
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if it % 50 == 0:
        loss_value = loss.item()  # synchronises: the step time below is the GPU's
        ms = (time.time() - t0) * 1000 / (1 if it % args.eval_interval == 0 else 50)
        log.write(json.dumps({"step": it, "loss": loss_value, "lr": lr, "ms_per_step": ms,
                              "tokens_per_sec": args.batch * args.block / ms * 1000}) + "\n")
        log.flush()
        t0 = time.time()
print(f"best val loss {best_val:.4f}")
model.eval()
sample = model.generate(torch.zeros((1, 1), dtype=torch.long, device=dev), 400)[0].tolist()
print("sample:\n" + "".join(chars[i] for i in sample))
