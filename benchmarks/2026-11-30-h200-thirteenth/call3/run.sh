#!/bin/bash
source .device/prelude.sh
mkdir -p /tmp/c
.device/bin/shader-stats --cache /tmp/c .device/wgsl/*.wgsl > $OUT/stats.txt 2>&1
grep -E "^==|Register" $OUT/stats.txt
python3 .device/sass.py /tmp/c 2>&1 | tail -12
rm -f /tmp/c/*.cache /tmp/c/*.bin; tar czf $OUT/sass.tgz -C /tmp/c .
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16|attention_B8_H8_T1024_d64_f16_fwd|attention_B8_H8_T1024_d64_dropout_f16_fwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd"
ST="gpt_recipe_6x384_T256_B64_amp"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 70 .device/bin/$b --only "$A|$ST" 2>&1 | grep -E " ms |_amp  " >> $T
done
done
grep -E "^==| ms " $T | grep -v "launches\|CPU\|recipe step" | awk '{print $1, $2, $3}'
cd tang-runtime
for t in dense_attention_coop dense_attention_dropout; do
  timeout 100 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
done
cd ../examples/scripts && timeout 120 python3 torch_attention_dropout.py > $OUT/torch.txt 2>&1; tail -20 $OUT/torch.txt
