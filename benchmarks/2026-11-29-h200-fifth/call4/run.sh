#!/usr/bin/env bash
# Call 4: the final build (f16 widening swap, branch-free narrowing, permuted matmul
# staging): the GPT step, the recipe and GPT-2's step in fp32 and AMP with PyTorch's
# twins in the same call; train_char_gpt --amp on the Rust book.
source .device/prelude.sh
(.device/bin/bench --only gpt_char_6x384_T256_B64_step; echo "== PyTorch"; python3 .device/torch_amp_anchors.py --no-compile) > $OUT/steps.txt 2>&1
grep -hE "step_(fp32|amp) | ms|pool" $OUT/steps.txt | head -14
(.device/bin/bench --only gpt_recipe_6x384_T256_B64; echo "== PyTorch"; python3 examples/scripts/torch_gpt_recipe.py --only gpt_recipe_6x384) > $OUT/recipe.txt 2>&1
grep -hE "^gpt_recipe|ms/step" $OUT/recipe.txt
(.device/bin/bench --only gpt2_124M_T1024_B8_step; echo "== PyTorch"; python3 examples/scripts/torch_gpt2_step.py) > $OUT/gpt2.txt 2>&1
grep -hE "^gpt2|ms" $OUT/gpt2.txt | grep -v "^ " | head -12
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --amp --out /tmp/amp > $OUT/train-amp.txt 2>&1
cp /tmp/amp/metrics.jsonl $OUT/metrics-amp.jsonl
grep -E "best val|^step 2000" $OUT/train-amp.txt
