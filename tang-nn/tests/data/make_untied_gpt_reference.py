#!/usr/bin/env python3
"""Reference file for tang's model saving: a small nanoGPT-shaped model with biases and an
untied head (`lm_head.weight` its own tensor), written by the format's own writer
(`safetensors.numpy.save_file`, the same serializer as `safetensors.torch.save_file`).

tang-nn/tests/files_gpt.rs loads it strictly into a tang GPT built from the config in its
metadata, saves that model and checks the file is this one, byte for byte. Usage (needs
`pip install safetensors numpy`):

    python3 make_untied_gpt_reference.py tang-nn/tests/data
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

out = sys.argv[1]
config = {"n_layer": 1, "n_head": 2, "n_embd": 8, "block_size": 4, "vocab_size": 5, "bias": True}
C, V, T = config["n_embd"], config["vocab_size"], config["block_size"]
rng = np.random.default_rng(12)


def t(*shape):
    return rng.standard_normal(shape).astype(np.float32) * np.float32(0.1)


# nanoGPT's state_dict order; save_file lays tensors out by dtype and name anyway.
tensors = {"transformer.wte.weight": t(V, C), "transformer.wpe.weight": t(T, C)}
for layer in range(config["n_layer"]):
    p = f"transformer.h.{layer}"
    tensors.update({
        f"{p}.ln_1.weight": t(C), f"{p}.ln_1.bias": t(C),
        f"{p}.attn.c_attn.weight": t(3 * C, C), f"{p}.attn.c_attn.bias": t(3 * C),
        f"{p}.attn.c_proj.weight": t(C, C), f"{p}.attn.c_proj.bias": t(C),
        f"{p}.ln_2.weight": t(C), f"{p}.ln_2.bias": t(C),
        f"{p}.mlp.c_fc.weight": t(4 * C, C), f"{p}.mlp.c_fc.bias": t(4 * C),
        f"{p}.mlp.c_proj.weight": t(C, 4 * C), f"{p}.mlp.c_proj.bias": t(C),
    })
tensors.update({"transformer.ln_f.weight": t(C), "transformer.ln_f.bias": t(C), "lm_head.weight": t(V, C)})
save_file(tensors, os.path.join(out, "gpt_untied_save_file.safetensors"),
          metadata={"config": json.dumps(config)})
