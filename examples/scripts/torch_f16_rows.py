"""PyTorch's side of the bench's f16 row and elementwise cases (`*_f16`): softmax and
layer norm over [65536, 1024] (forward, and layer norm forward + backward with f32 weights
cast to f16, as PyTorch requires matching dtypes) and the tanh GELU over 64M elements,
each in fp16 and fp32, timed with CUDA events after a warm-up, median of repeats.
Usage: python3 torch_f16_rows.py"""
import torch
import torch.nn.functional as F

R, C, N = 65536, 1024, 64 << 20


def time_ms(fn, reps=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}")
for dtype, suffix in [(torch.float32, ""), (torch.float16, "_f16")]:
    x = torch.randn(R, C, device="cuda", dtype=dtype)
    g = torch.randn(R, C, device="cuda", dtype=dtype)
    w = torch.randn(C, device="cuda", dtype=dtype)
    b = torch.randn(C, device="cuda", dtype=dtype)
    print(f"torch_softmax_65536x1024_fwd{suffix:<6} {time_ms(lambda: torch.softmax(x, -1)):10.4f} ms")
    print(f"torch_layer_norm_65536x1024_fwd{suffix:<6} {time_ms(lambda: F.layer_norm(x, (C,), w, b)):10.4f} ms")
    xr = x.clone().requires_grad_(True)

    def ln_fwd_bwd():
        y = F.layer_norm(xr, (C,), w, b)
        y.backward(g)

    print(f"torch_layer_norm_65536x1024_fwd_bwd{suffix:<6} {time_ms(ln_fwd_bwd):10.4f} ms")
    v = torch.randn(N, device="cuda", dtype=dtype)
    print(f"torch_gelu_tanh_fwd{suffix}_64M {time_ms(lambda: F.gelu(v, approximate='tanh')):10.4f} ms")
    del x, g, xr, v
