#!/bin/bash
source .device/prelude.sh
S=$OUT/stats.txt
.device/bin/shader-stats --ir $OUT/ir .device/wgsl/matmul_coop_380.f16.wgsl .device/wgsl/matmul_coop_380.vec4.wgsl > $S 2>&1
.device/bin/shader-stats .device/wgsl/*.wgsl >> $S 2>&1
echo "== no zero" >> $S
.device/bin/shader-stats --no-zero .device/wgsl/*f16.wgsl >> $S 2>&1
head -60 $S
ls -la $OUT/ir | head
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NT|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt2_8192x3072x768_NT"
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16"
ST="gpt_char_6x384_T256_B64_step_amp|gpt_recipe_6x384_T256_B64_amp"
T=$OUT/tang.txt
for r in 1 2; do
for z in 1 0; do
  echo "== zero $z round $r" >> $T; TANG_ZERO_WG=$z timeout 95 .device/bin/bench --only "$M|$A|$ST" 2>&1 | grep -v "^\s*$" >> $T
done
done
for m in vec4hadd vec4s; do
  echo "== $m" >> $T; TANG_COOP_STAGE=$m timeout 40 .device/bin/bench --only "matmul_f16_4096|matmul_f16_gpt_16384x1152x384_NT" 2>&1 | grep -v "^\s*$" >> $T
done
grep -E "^==|TFLOP| ms" $T | awk '{print $1, $2, $3, $4, $5}'
