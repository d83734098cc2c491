"""A character-level GPT (nanoGPT's model.py) on the Rust book: 50 AdamW steps, then a
sample. Twin of examples/examples/char_gpt_50.rs; run it beside nanoGPT's model.py."""

import torch
from model import GPT, GPTConfig

text = open("examples/data/rust-book.txt").read()
chars = sorted(set(text))
ids = torch.tensor([chars.index(c) for c in text])
torch.manual_seed(0)
config = GPTConfig(
    vocab_size=len(chars),
    block_size=64,
    n_layer=2,
    n_head=4,
    n_embd=64,
    dropout=0.0,
    bias=False,
)
model = GPT(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for step in range(50):
    starts = torch.randint(len(ids) - 64, (16,))
    x = torch.stack([ids[s : s + 64] for s in starts])
    y = torch.stack([ids[s + 1 : s + 65] for s in starts])
    _, loss = model(x, y)  # nanoGPT's forward returns the cross-entropy with targets
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step}: loss {loss.item():.3f}")
model.eval()
sample = model.generate(
    torch.zeros((1, 1), dtype=torch.long), 100, temperature=0.8, top_k=40
)
print("".join(chars[i] for i in sample[0].tolist()))
