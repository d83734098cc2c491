#!/bin/bash
source .device/prelude.sh
A="attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_fwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16"
ST="gpt_recipe_6x384_T256_B64"
T=$OUT/tang.txt
for r in 1 2 3; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 80 .device/bin/$b --only "$A|$ST" 2>&1 | grep -E " ms |_amp  " >> $T
done
done
grep -E "^==| ms " $T | grep -v "launches\|CPU\|recipe step" | awk '{print $1, $2, $3}'
cd tang-runtime
for t in dense_attention_dropout dense_attention; do
  timeout 100 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
done
