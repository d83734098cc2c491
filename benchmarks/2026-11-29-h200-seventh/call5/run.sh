#!/usr/bin/env bash
# Call 5: the final build's char-GPT AMP step and PyTorch's eager AMP step, alternated
# three times in one call (PyTorch's figure moves between calls); the fp32 training run.
source .device/prelude.sh
for r in 1 2 3; do
  echo "== round $r"
  .device/bin/bench --only "gpt_char_6x384_T256_B64_step_amp|gpt_char_6x384_T256_B64_step_fp32" 2>&1 | grep -E "^gpt_char"
  python3 .device/torch_amp_anchors.py --no-compile 2>&1 | grep -E "gpt_step"
done > $OUT/rounds.txt 2>&1
cat $OUT/rounds.txt
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --out /tmp/fp32-run > $OUT/train-fp32.txt 2>&1; grep -E "best" $OUT/train-fp32.txt; tail -2 $OUT/train-fp32.txt
