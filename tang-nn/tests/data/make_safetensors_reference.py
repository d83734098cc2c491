#!/usr/bin/env python3
"""Reference files for tang's safetensors writer, written by the format's own writer
(`safetensors.numpy.save_file`, the same serializer as `safetensors.torch.save_file`).

tang-nn/tests/safetensors_write.rs builds the same tensors and checks that tang writes
these files byte for byte. Usage (needs `pip install safetensors numpy ml_dtypes`):

    python3 make_safetensors_reference.py tang-nn/tests/data
"""
import os
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

out = sys.argv[1]


def floats(n):
    """n f32 values, exact in binary, that exercise rounding to 16 bits: a spread of
    magnitudes, then values exactly halfway between neighbours of F16 and of BF16 (ties go
    to the even neighbour), then specials."""
    i = np.arange(n, dtype=np.int64)
    v = (((i * 2654435761) % (1 << 24)).astype(np.float32) - (1 << 23)) * np.float32(2.0**-17)
    ties = np.array([1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-11),
                     65520.0, 2**-25, 3 * 2**-26, 1e-40, 0.0, -0.0, np.inf, -np.inf],
                    dtype=np.float32)
    k = min(n, len(ties))
    v[:k] = ties[:k]
    return v


# Inserted out of name order, so that the file shows the writer's own ordering.
tensors = {
    "layer.weight": floats(12).reshape(3, 4),
    "layer.bias": floats(4) * np.float32(0.5),
    "ids": np.array([0, 5, -100, 2**40, 80], dtype=np.int64),
    "counts": np.array([7, 0, 4294967295], dtype=np.uint32),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "scalar": np.array(2.5, dtype=np.float32),
    "a.first": floats(6).reshape(2, 1, 3),
}
metadata = {"format": "pt", "note": "quote \" backslash \\ newline \n tab \t ünï"}

save_file(tensors, os.path.join(out, "save_file_f32.safetensors"), metadata=metadata)
for name, dt in [("f16", np.float16), ("bf16", ml_dtypes.bfloat16)]:
    with np.errstate(over="ignore"):  # 65520 rounds to infinity in F16, as intended
        cast = {k: (v.astype(dt) if v.dtype == np.float32 else v) for k, v in tensors.items()}
    save_file(cast, os.path.join(out, f"save_file_{name}.safetensors"), metadata=metadata)
for fn in sorted(os.listdir(out)):
    if fn.startswith("save_file_"):
        print(fn, os.path.getsize(os.path.join(out, fn)))
