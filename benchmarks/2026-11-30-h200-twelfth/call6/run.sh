#!/bin/bash
source .device/prelude.sh
which zstd || echo "no zstd"
.device/bin/shader-stats --cache $OUT/cache .device/wgsl/*.wgsl > $OUT/stats.txt 2>&1
grep -E "^==|Register|Binary" $OUT/stats.txt
python3 .device/sass.py $OUT/cache 2>&1 | tail -8
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NT|matmul_autocast_4096|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt_16384x1536x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt2_8192x3072x768_NT"
ST="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 70 .device/bin/$b --only "$M|$ST" 2>&1 | grep -E "TFLOP|ms " >> $T
done
done
grep -E "^==|TFLOP| ms " $T | awk '{print $1, $2, $3, $4, $5}'
(cd tang-runtime && timeout 200 ../.device/bin/dense_f16 > $OUT/tests.txt 2>&1; echo "dense_f16 rc $?" >> $OUT/tests.txt)
tail -5 $OUT/tests.txt
