#!/bin/bash
source .device/prelude.sh
S=$OUT/stats.txt
.device/bin/shader-stats --ir $OUT/ir .device/wgsl/matmul_coop_380.f16.wgsl .device/wgsl/matmul_coop_380.vec4.wgsl > $S 2>&1
.device/bin/shader-stats .device/wgsl/*.wgsl >> $S 2>&1
echo "== no zero" >> $S
.device/bin/shader-stats --no-zero .device/wgsl/matmul_coop_380.f16.wgsl .device/wgsl/attention_fwd_coop_d64_f16.wgsl >> $S 2>&1
head -80 $S
ls -la $OUT/ir | head
T=$OUT/tang.txt
for m in f16 vec4 f16 vec4; do
  echo "== $m" >> $T; TANG_COOP_STAGE=$m timeout 60 .device/bin/bench --only "matmul_autocast_4096|matmul_f16_4096|matmul_autocast_gpt_16384x1152x384_NT" 2>&1 | grep -v "^\s*$" >> $T
done
grep -E "^==|TFLOP" $T | awk '{print $1, $2, $3, $4, $5}'
