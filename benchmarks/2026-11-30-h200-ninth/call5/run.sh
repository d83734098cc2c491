#!/bin/bash
# Interleaved rounds: tang's AMP char-GPT step and recipe, then PyTorch's eager steps.
source .device/prelude.sh
for r in 1 2 3; do
  echo "== round $r tang"
  .device/bin/bench-before --only "gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp" 2>&1 | grep -E "^(gpt_|  pool|device)" | tee -a $OUT/tang.txt
  echo "== round $r torch"
  python3 .device/torch_amp_anchors.py --no-compile 2>&1 | grep gpt_step | tee -a $OUT/torch.txt
  python3 examples/scripts/torch_gpt_recipe.py --only gpt_recipe_6x384 2>&1 | tee -a $OUT/torch-recipe.txt
done
