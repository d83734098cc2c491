"""PyTorch's side of the bench's f16 matmul cases (`matmul_f16_*`): fp16 `a @ b` with
f32 accumulation (cuBLAS's default for fp16 inputs) at the same shapes and layouts, timed
with CUDA events after a warm-up, median of repeats. NT means B is stored [n, k] (a @ b.t()),
TN means A is stored [k, m] (a.t() @ b). Usage: python3 torch_matmul_f16.py"""
import torch

TOKENS = 16384
cases = [("4096", 4096, 4096, 4096, False, False)]
for tag, ta, tb in [("NN", False, False), ("NT", False, True), ("TN", True, False)]:
    cases.append((f"4096x4096x1024_{tag}", 4096, 4096, 1024, ta, tb))
for out, inp in [(1152, 384), (384, 384), (1536, 384), (384, 1536)]:
    cases.append((f"gpt_{TOKENS}x{out}x{inp}_NT", TOKENS, out, inp, False, True))
    cases.append((f"gpt_{TOKENS}x{inp}x{out}_NN", TOKENS, inp, out, False, False))
    cases.append((f"gpt_{out}x{inp}x{TOKENS}_TN", out, inp, TOKENS, True, False))
for out, inp in [(2304, 768), (768, 3072), (3072, 768)]:
    cases.append((f"gpt2_8192x{out}x{inp}_NT", 8192, out, inp, False, True))
# GPT-2's LM head at its vocabulary and at nanoGPT's padded one (as the bench's cases).
for vocab in [50257, 50304]:
    cases.append((f"gpt2_8192x{vocab}x768_NT", 8192, vocab, 768, False, True))
    cases.append((f"gpt2_8192x768x{vocab}_NN", 8192, 768, vocab, False, False))
    cases.append((f"gpt2_{vocab}x768x8192_TN", vocab, 768, 8192, True, False))


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
for dtype, prefix in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
    for tag, m, n, k, ta, tb in cases:
        a = torch.randn(*((k, m) if ta else (m, k)), device="cuda", dtype=dtype)
        b = torch.randn(*((n, k) if tb else (k, n)), device="cuda", dtype=dtype)
        aa = a.t() if ta else a
        bb = b.t() if tb else b
        ms = time_ms(lambda: aa @ bb)
        print(f"torch_matmul_{prefix}_{tag:32s} {ms:9.4f} ms {2 * m * n * k / ms / 1e9:8.1f} TFLOP/s")
