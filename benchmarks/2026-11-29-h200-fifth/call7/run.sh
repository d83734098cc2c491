#!/usr/bin/env bash
# Call 7: the GradScaler's unscale in place (bench-unscale, f16292d) against packing the
# gradients (bench, e98348d): the AMP steps, PyTorch's in the same call.
source .device/prelude.sh
for b in bench bench-unscale bench bench-unscale; do
  echo "== $b"; .device/bin/$b --only gpt_char_6x384_T256_B64_step_amp 2>&1 | grep -E "^gpt_char|pack|unscale|foreach|total"
done > $OUT/steps.txt 2>&1
cat $OUT/steps.txt
for b in bench bench-unscale; do
  echo "== $b"; .device/bin/$b --only gpt_recipe_6x384_T256_B64_amp 2>&1 | grep -E "^gpt_recipe"
  .device/bin/$b --only gpt2_124M_T1024_B8_step_amp 2>&1 | grep -E "^gpt2|pack|unscale|foreach|total"
done > $OUT/gpt2.txt 2>&1
cat $OUT/gpt2.txt
python3 .device/torch_amp_anchors.py --no-compile 2>&1 | grep gpt_step > $OUT/torch.txt
python3 examples/scripts/torch_gpt2_step.py 2>&1 | grep ms/step >> $OUT/torch.txt
cat $OUT/torch.txt
