#!/usr/bin/env python3
"""PyTorch's (cuBLAS's) time for each matmul of the bench's GPT training step, under the
names `examples/bench` gives tang's (`matmul_gpt_{m}x{n}x{k}_{NN,NT,TN}`), so the two
can be read side by side per shape.

Layouts as tang's bench: NN is `A[m,k] @ B[k,n]`, NT is `A[m,k] @ B[n,k].T` (a Linear's
forward), TN is `A[k,m].T @ B[k,n]` (a weight gradient). fp32, TF32 off, timed with CUDA
events after a warm-up: each repeat runs enough products back to back for about 20 ms and
the median of the repeats is printed, as tang's bench does.
Usage (on a CUDA machine): python3 torch_gpt_matmuls.py [--json PATH]
"""
import argparse, json
import torch

p = argparse.ArgumentParser()
p.add_argument("--json", help="write {name: {ms, rate, unit}} here")
args = p.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")

# (m, n, k, layout): the products of one GPT step at B*T = 16,384 tokens, width 384.
SHAPES = [
    (16384, 1152, 384, "NT"), (16384, 384, 1152, "NN"), (1152, 384, 16384, "TN"),
    (16384, 384, 384, "NT"), (16384, 384, 384, "NN"), (384, 384, 16384, "TN"),
    (16384, 1536, 384, "NT"), (16384, 384, 1536, "NN"), (1536, 384, 16384, "TN"),
    (16384, 384, 1536, "NT"), (16384, 1536, 384, "NN"), (384, 1536, 16384, "TN"),
]


def operands(m, n, k, layout):
    g = torch.Generator(device=dev).manual_seed(m * 31 + n * 7 + k)
    a_shape = (k, m) if layout == "TN" else (m, k)
    b_shape = (n, k) if layout == "NT" else (k, n)
    a = torch.rand(a_shape, device=dev, generator=g) - 0.5
    b = torch.rand(b_shape, device=dev, generator=g) - 0.5
    if layout == "NT":
        return lambda: a @ b.t()
    if layout == "TN":
        return lambda: a.t() @ b
    return lambda: a @ b


def time_ms(f):
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(4):
        f()
    end.record()
    torch.cuda.synchronize()
    k = max(1, min(256, int(20.0 / max(start.elapsed_time(end) / 4, 1e-3)) + 1))
    times = []
    for _ in range(10):
        start.record()
        for _ in range(k):
            f()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / k)
    times.sort()
    return times[len(times) // 2]


results = {}
print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
for m, n, k, layout in SHAPES:
    name = f"matmul_gpt_{m}x{n}x{k}_{layout}"
    ms = time_ms(operands(m, n, k, layout))
    tflops = 2.0 * m * n * k / ms / 1e9
    results[name] = {"ms": ms, "rate": tflops, "unit": "TFLOP/s"}
    print(f"{name:48s} {ms:9.4f} ms {tflops:9.1f} TFLOP/s")
if args.json:
    with open(args.json, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
