#!/usr/bin/env python3
"""Pairs tang's bench JSON with PyTorch's (torch_anchors.py --json) from the same run and
prints the Markdown table kept in BENCHMARKS.md.

    python3 examples/scripts/bench_compare.py bench.json torch.json
"""
import json
import sys

# tang case -> (PyTorch case, how to compare)
PAIRS = [
    ("copy_256MiB", "copy_256MiB", "time"),
    ("elementwise_chain_64M", "copy_256MiB", "time"),
    ("gelu_tanh_fwd_bwd_64M", "gelu_tanh_fwd_bwd_compiled_64M", "time"),
    ("gelu_tanh_fwd_bwd_64M", "gelu_tanh_fwd_bwd_eager_64M", "time"),
    ("gelu_tanh_fwd_64M", "gelu_tanh_fwd_eager_64M", "time"),
    ("tiny_add_x100", "tiny_add_x100", "time"),
    ("tiny_add_x1000", "tiny_add_x100", "per-launch"),
    ("adam_step_124M", "adam_step_124M_fused", "time"),
    ("adam_step_124M", "adam_step_124M_foreach", "time"),
    ("matmul_fp32_1024", "matmul_fp32_1024", "time"),
    ("matmul_fp32_2048", "matmul_fp32_2048", "time"),
    ("matmul_fp32_4096", "matmul_fp32_4096", "time"),
    ("matmul_fp32_4096x4096x1024_NN", "matmul_fp32_4096x4096x1024_NN", "time"),
    ("matmul_fp32_4096x4096x1024_NT", "matmul_fp32_4096x4096x1024_NT", "time"),
    ("matmul_fp32_4096x4096x1024_TN", "matmul_fp32_4096x4096x1024_TN", "time"),
    ("softmax_65536x1024_fwd", "softmax_65536x1024_fwd", "time"),
    ("softmax_65536x1024_fwd_bwd", "softmax_65536x1024_fwd_bwd", "time"),
    ("layer_norm_65536x1024_fwd", "layer_norm_65536x1024_fwd", "time"),
    ("layer_norm_65536x1024_fwd_bwd", "layer_norm_65536x1024_fwd_bwd", "time"),
    ("attention_B8_H8_T1024_d64_fwd_bwd", "attention_B8_H8_T1024_d64_fwd_bwd_explicit", "time"),
    ("attention_B8_H8_T1024_d64_fwd_bwd", "attention_B8_H8_T1024_d64_fwd_bwd_sdpa", "time"),
    ("mlp_784_1024_1024_10_b1024_step", "mlp_784_1024_1024_10_b1024_step", "time"),
    ("mlp_64_128_10_b64_step", "mlp_64_128_10_b64_step", "time"),
    ("gpt_char_6x384_T256_B64_step_fp32", "gpt_char_6x384_T256_B64_step_fp32", "time"),
    ("gpt_char_6x384_T256_B64_step_fp32", "gpt_char_6x384_T256_B64_step_fp32_sdpa", "time"),
    ("gpt_char_6x384_T256_B64_step_fp32", "gpt_char_6x384_T256_B64_step_fp32_compiled", "time"),
]


def peer_case(results, name):
    """PyTorch's case `name`, also when its key carries a note ("name (10.75M params)")."""
    if name in results:
        return name
    return next((k for k in results if k.startswith(name + " (")), None)


def main():
    ours = json.load(open(sys.argv[1]))
    theirs = json.load(open(sys.argv[2]))
    o, t = ours["results"], theirs["results"]
    print(f"tang on {ours['device']}; PyTorch {theirs['torch']} on {theirs['device']}\n")
    print("| case | tang | PyTorch case | PyTorch | PyTorch time / tang time |")
    print("|---|---|---|---|---|")
    for mine, peer, how in PAIRS:
        peer = peer_case(t, peer)
        if mine not in o or peer is None:
            continue
        a, b = o[mine], t[peer]
        rate = f" ({a['rate']:.1f} {a['unit']})" if a.get("rate") else ""
        prate = f" ({b['rate']:.1f} {b['unit']})" if b.get("rate") else ""
        if how == "per-launch":
            ratio = (b["ms"] / 100) / (a["ms"] / 1000)
        else:
            ratio = b["ms"] / a["ms"]
        print(f"| `{mine}` | {a['ms']:.4f} ms{rate} | `{peer}` | {b['ms']:.4f} ms{prate} | {ratio:.2f} |")
    copy = o.get("copy_256MiB")
    if copy:
        print(f"\nShare of tang's copy bandwidth ({copy['rate']:.0f} GB/s):\n")
        for name in ["elementwise_chain_64M", "gelu_tanh_fwd_64M", "softmax_65536x1024_fwd",
                     "layer_norm_65536x1024_fwd"]:
            if name in o and o[name].get("rate"):
                print(f"- `{name}`: {100 * o[name]['rate'] / copy['rate']:.0f}%")
    rest = [k for k in o if k not in {m for m, _, _ in PAIRS}]
    if rest:
        print("\ntang-only cases:\n")
        for k in rest:
            a = o[k]
            rate = f" ({a['rate']:.1f} {a['unit']})" if a.get("rate") else ""
            print(f"- `{k}`: {a['ms']:.4f} ms{rate}")


if __name__ == "__main__":
    main()
