"""An MLP fitting sin(x) with MSE and Adam, through a custom activation with its own
backward (torch.autograd.Function). Twin of sin_mlp.rs beside this file."""

import torch
import torch.nn.functional as F
from torch import nn


class SoftReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.softplus(4 * x) / 4

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(4 * x)


torch.manual_seed(0)
fc1, fc2 = nn.Linear(1, 64), nn.Linear(64, 1)
x = torch.linspace(-3, 3, 256).reshape(256, 1)
y = torch.sin(x)
x0 = torch.tensor([0.5], dtype=torch.double, requires_grad=True)
assert torch.autograd.gradcheck(SoftReLU.apply, x0)  # the hand-written backward
opt = torch.optim.Adam([*fc1.parameters(), *fc2.parameters()], lr=1e-2)
for step in range(1001):
    loss = F.mse_loss(fc2(SoftReLU.apply(fc1(x))), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 200 == 0:
        print(f"step {step}: mse {loss.item():.5f}")
