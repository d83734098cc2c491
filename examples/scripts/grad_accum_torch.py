"""Gradient accumulation: the gradients of 4 micro-batches of 8, each loss scaled by 1/4,
equal (within 1e-6) the gradient of one batch of 32. Twin of examples/examples/grad_accum.rs.
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
x, y = torch.randn(32, 16), torch.randn(32, 1)
F.mse_loss(model(x), y).backward()
full = {name: p.grad.clone() for name, p in model.named_parameters()}
model.zero_grad()
for i in range(4):
    (F.mse_loss(model(x[8 * i : 8 * i + 8]), y[8 * i : 8 * i + 8]) / 4).backward()
for name, p in model.named_parameters():
    err = (full[name] - p.grad).abs().max().item()
    assert err <= 1e-6, (name, err)
    print(f"{name}: max difference {err:.1e}")
