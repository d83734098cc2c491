#!/bin/bash
source .device/prelude.sh
T=$OUT/tang.txt
for r in 1 2; do
  echo "== bench (main 44c338a) round $r" >> $T
  timeout 100 .device/bin/bench --only "gpt_recipe_6x384_T256_B64|gpt_recipe_6x384_T256_B64_amp|gpt_char_6x384_T256_B64_step_amp" >> $T 2>&1
  (cd examples/scripts && timeout 150 python3 torch_gpt_recipe.py --only 6x384) >> $OUT/torch.txt 2>&1
done
grep -E "^==|^gpt\S+ +[0-9.]+ ms" $T | grep -v _host
cat $OUT/torch.txt
