"""A CNN on the bundled digits: SGD with momentum and a cosine schedule, evaluated under
no_grad, saved and reloaded with identical logits. Twin of examples/examples/cnn_digits.rs.
"""

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_model, save_model
from torch import nn


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )


torch.manual_seed(0)
data = torch.tensor(
    np.loadtxt("examples/data/digits.csv", delimiter=",", dtype=np.float32)
)
images, labels = data[:, :64] / 16, data[:, 64].long()
order = torch.randperm(len(data))
test, train = order[: round(0.2 * len(data))], order[round(0.2 * len(data)) :]
model = cnn()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=300)
for step in range(300):
    batch = train[(step * 64 + torch.arange(64)) % len(train)]
    loss = F.cross_entropy(model(images[batch].reshape(-1, 1, 8, 8)), labels[batch])
    opt.zero_grad()
    loss.backward()
    opt.step()
    schedule.step()
model.eval()
x, y = images[test].reshape(-1, 1, 8, 8), labels[test]
with torch.no_grad():
    logits = model(x)
print(f"test accuracy {(logits.argmax(1) == y).float().mean():.3f}")
save_model(model, "cnn.safetensors")
reloaded = cnn()
load_model(reloaded, "cnn.safetensors")
with torch.no_grad():
    assert torch.equal(reloaded(x), logits)
