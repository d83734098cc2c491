#!/bin/bash
source .device/prelude.sh
mkdir -p /tmp/t && tar -xJf .device/tests.tar.xz -C /tmp/t
(cd tang-runtime && timeout 100 /tmp/t/tests/dense_rows 2>&1 | grep -E "embedding|test result|FAILED|panicked|failed") | tee $OUT/tests.txt
S="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp|gpt_recipe_6x384_T256_B64"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b steps $r" >> $T; timeout 90 .device/bin/$b --only "$S" 2>&1 | grep -v "^\s*$" >> $T
done
done
for b in bench-before bench; do
  echo "== $b gpt2" >> $T; timeout 80 .device/bin/$b --only "gpt2_124M_T1024_B8_step_amp" 2>&1 | grep -v "^\s*$" >> $T
done
grep -E "^==|step_amp |_amp |B64 |embedding" $T | awk '{print $1, $2, $3, $4, $5}'
