"""PyTorch's side of the tensor-op benchmark cases in `tang-runtime/tests/ops_bench.rs`
(permute, conv2d) and of the bench program's `broadcast_add_*` cases
(`examples/examples/bench/elementwise.rs`) and `bias_grad_*` cases
(`examples/examples/bench/rows.rs`: Linear's bias gradient, `g.sum(0)`), under the same
names.

Run on the same GPU in the same run as the tang cases (fp32, TF32 off):

    python3 examples/scripts/torch_ops_anchors.py

Each case prints milliseconds per call: the median of 11 timed batches, each batch timed
with CUDA events after a warm-up, as the tang side times a batch and waits once.
"""

import torch
import torch.nn.functional as F

torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(11):
        start, end = torch.cuda.Event(True), torch.cuda.Event(True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / reps)
    times.sort()
    return times[len(times) // 2]


def layout_cases():
    for name, shape, dims in [
        ("permute [64,256,6,64] -> [64,6,256,64]", (64, 256, 6, 64), (0, 2, 1, 3)),
        ("permute [64,6,256,64] -> [64,256,6,64]", (64, 6, 256, 64), (0, 2, 1, 3)),
        ("permute [64,512,768] -> [64,768,512]", (64, 512, 768), (0, 2, 1)),
    ]:
        x = torch.randn(*shape, device=dev)
        copy = median_ms(lambda: x.clone(), 20)
        perm = median_ms(lambda: x.permute(*dims).contiguous(), 20)
        print(f"{name}: {perm:.4f} ms, copy {copy:.4f} ms, copy/permute {copy / perm:.2f}")


def broadcast_cases():
    r = 4096
    a = torch.randn(r, r, device=dev)
    copy = median_ms(lambda: a.clone(), 20)
    copy_gbps = 2 * 4 * r * r / copy / 1e6
    print(f"broadcast_add_{r}x{r}_copy: {copy:.4f} ms, {copy_gbps:.0f} GB/s")
    for kind, shape in [("same", (r, r)), ("col", (r, 1)), ("row", (r,))]:
        b = torch.randn(*shape, device=dev)
        ms = median_ms(lambda: a + b, 20)
        gbps = (2 * r * r + b.numel()) * 4 / ms / 1e6
        print(
            f"broadcast_add_{r}x{r}_{kind}: {ms:.4f} ms, {gbps:.0f} GB/s, "
            f"{100 * gbps / copy_gbps:.0f}% of copy"
        )


def bias_grad_cases():
    rows = 16384
    for n in (384, 1152, 1536):
        for dtype, suffix in ((torch.float32, ""), (torch.float16, "_f16")):
            g = torch.randn(rows, n, device=dev, dtype=dtype)
            # What autograd runs for a Linear's bias: the column sums, in f32 for f16 g.
            ms = median_ms(lambda: g.sum(0, dtype=torch.float32), 50)
            gbps = g.numel() * g.element_size() / ms / 1e6
            print(f"bias_grad_{rows}x{n}{suffix}: {ms:.4f} ms, {gbps:.0f} GB/s")


def conv_case():
    x = torch.randn(64, 64, 56, 56, device=dev, requires_grad=True)
    w = torch.randn(64, 64, 3, 3, device=dev, requires_grad=True)
    b = torch.randn(64, device=dev, requires_grad=True)
    g = torch.randn(64, 64, 56, 56, device=dev)

    def fwd():
        with torch.no_grad():
            F.conv2d(x, w, b, padding=1)

    def fwd_bwd():
        F.conv2d(x, w, b, padding=1).backward(g)

    print(f"conv2d B64 64->64 56x56 3x3 pad 1 fwd: {median_ms(fwd, 10):.4f} ms")
    print(f"conv2d B64 64->64 56x56 3x3 pad 1 fwd+bwd: {median_ms(fwd_bwd, 10):.4f} ms")


if __name__ == "__main__":
    print("PyTorch", torch.__version__, "on", torch.cuda.get_device_name())
    layout_cases()
    broadcast_cases()
    bias_grad_cases()
    conv_case()
