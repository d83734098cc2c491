#!/usr/bin/env bash
# Call 3: f16 widening by unpack2x16float and a branch-free exact narrowing (bench), against
# the widening alone (bench-dec) and native both ways (bench-native, not exact); f16 tests;
# the AMP step and recipe with PyTorch in the same call.
source .device/prelude.sh
cd tang-runtime
for t in dense_f16 ops_f16_elementwise dense_rows_f16; do
  timeout 200 ../.device/bin/$t --test-threads=2 > $OUT/test-$t.txt 2>&1; echo "$t rc $?"; grep "test result" $OUT/test-$t.txt
done
cd ..
for b in bench bench-dec bench-native bench bench-dec bench-native; do
  echo "== $b"; .device/bin/$b --only gelu_tanh 2>&1 | grep -E "GB/s|fail"
done > $OUT/gelu.txt 2>&1
cat $OUT/gelu.txt
.device/bin/bench --only gpt_char_6x384_T256_B64_step_amp > $OUT/steps.txt 2>&1
.device/bin/bench --only gpt_recipe_6x384_T256_B64_amp >> $OUT/steps.txt 2>&1
.device/bin/bench --only gpt_char_6x384_T256_B64_step_amp >> $OUT/steps.txt 2>&1
python3 .device/torch_amp_anchors.py --no-compile > $OUT/torch-amp.txt 2>&1
python3 examples/scripts/torch_gpt_recipe.py --only gpt_recipe_6x384 >> $OUT/torch-amp.txt 2>&1
grep -E "^gpt_|launches|gelu|to_dtype|reduce_cols_tree_v4_f16|total" $OUT/steps.txt
grep -E "gpt_" $OUT/torch-amp.txt
