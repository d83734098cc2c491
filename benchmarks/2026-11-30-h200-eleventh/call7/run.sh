#!/bin/bash
source .device/prelude.sh
.device/bin/shader-stats .device/wgsl/*.wgsl 2>&1 | grep -E "^==|Register|Binary" | tee $OUT/stats.txt | paste - - - | awk '{print $2, $9, $14}'
mkdir -p /tmp/t && tar -xJf .device/tests.tar.xz -C /tmp/t
(cd tang-runtime && TANG_COOP_UNCOND=1 timeout 150 /tmp/t/tests/dense_f16 tensor_cores_and_the_f32_tile_agree backward_rounds 2>&1 | grep -E "test result|FAILED|panicked") | tee $OUT/tests.txt
M="matmul_f16_4096|matmul_f16_4096x4096x1024_NT|matmul_f16_gpt_16384x1152x384_NT|matmul_f16_gpt_16384x384x384_NN|matmul_f16_gpt_1152x384x16384_TN|matmul_f16_gpt_16384x384x1536_NN|matmul_f16_gpt2_8192x3072x768_NT|matmul_autocast_4096"
S="gpt_char_6x384_T256_B64_step_amp"
T=$OUT/tang.txt
for r in 1; do
for u in 0 1; do
  echo "== uncond $u round $r" >> $T; TANG_COOP_UNCOND=$u timeout 70 .device/bin/bench --only "$M|$S" 2>&1 | grep -v "^\s*$" >> $T
done
done
grep -E "^==|TFLOP|step_amp " $T | awk '{print $1, $2, $3, $4, $5}'
