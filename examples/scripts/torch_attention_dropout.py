"""PyTorch's side of the bench program's attention cases with dropout on the weights
(`examples/examples/bench/attention.rs`), under the same names: causal
`F.scaled_dot_product_attention` forward + backward with `dropout_p=0.2`, and the
dropout-free cases beside them, in fp32 (TF32 off) and fp16.

Run on the same GPU in the same run as the tang cases:

    python3 examples/scripts/torch_attention_dropout.py

Each case prints milliseconds per forward + backward: the median of 11 timed batches,
each batch timed with CUDA events after a warm-up, as the tang side times a batch and
waits once. The fp32 cases run PyTorch's efficient-attention kernel (FlashAttention's
takes fp16 and bf16 only), the fp16 ones FlashAttention's; the backend each case ran
is printed beside it.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# The timing (and TF32 off) of the other anchors.
from torch_ops_anchors import dev, median_ms

# (name, [B, H, T, D], dropout_p): the tang bench's cases.
CASES = [
    ("attention_B8_H8_T1024_d64_fwd_bwd", (8, 8, 1024, 64), 0.0),
    ("attention_B8_H8_T1024_d64_dropout_fwd_bwd", (8, 8, 1024, 64), 0.2),
    ("attention_gpt_B64_H6_T256_d64_fused_fwd_bwd", (64, 6, 256, 64), 0.0),
    ("attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd", (64, 6, 256, 64), 0.2),
    ("attention_gpt2_B8_H12_T1024_d64_fwd_bwd", (8, 12, 1024, 64), 0.0),
    ("attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd", (8, 12, 1024, 64), 0.2),
]


# (name, [B, H, T, D], dropout_p): the tang bench's forward-only f16 cases (its
# `_autocast_fwd` cases round f32 to f16 on load; PyTorch's autocast casts to fp16 first).
FWD_CASES = [
    ("attention_B8_H8_T1024_d64_f16_fwd", (8, 8, 1024, 64), 0.0),
    ("attention_B8_H8_T1024_d64_dropout_f16_fwd", (8, 8, 1024, 64), 0.2),
    ("attention_gpt_B64_H6_T256_d64_f16_fwd", (64, 6, 256, 64), 0.0),
    ("attention_gpt_B64_H6_T256_d64_dropout_f16_fwd", (64, 6, 256, 64), 0.2),
    ("attention_gpt2_B8_H12_T1024_d64_f16_fwd", (8, 12, 1024, 64), 0.0),
]


def forward_case(shape, p):
    q, k, v = (torch.randn(*shape, device=dev, dtype=torch.float16) for _ in range(3))

    def fwd():
        with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            # dropout_p applies in training; with no_grad it still drops (F.sdpa does not
            # look at a module's training flag).
            F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)

    return median_ms(fwd, 5)


def case(shape, p, dtype, backend):
    q, k, v = (torch.randn(*shape, device=dev, dtype=dtype, requires_grad=True) for _ in range(3))
    go = torch.randn(*shape, device=dev, dtype=dtype)

    def fwd_bwd():
        with sdpa_kernel(backend):
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        y.backward(go)
        q.grad = k.grad = v.grad = None

    return median_ms(fwd_bwd, 5)


if __name__ == "__main__":
    print("PyTorch", torch.__version__, "on", torch.cuda.get_device_name())
    for dtype, suffix, backend in [
        (torch.float32, "", SDPBackend.EFFICIENT_ATTENTION),
        (torch.float16, "_f16", SDPBackend.FLASH_ATTENTION),
    ]:
        for name, shape, p in CASES:
            ms = case(shape, p, dtype, backend)
            print(f"{name}{suffix}_sdpa: {ms:.4f} ms ({backend.name})")
    for name, shape, p in FWD_CASES:
        print(f"{name}_sdpa: {forward_case(shape, p):.4f} ms (FLASH_ATTENTION, forward only)")
