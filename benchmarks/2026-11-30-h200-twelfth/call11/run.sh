#!/bin/bash
source .device/prelude.sh
A="attention_B8_H8_T1024_d64_fwd|attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd"
ST="gpt_recipe_6x384_T256_B64|gpt_char_6x384_T256_B64_step"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 60 .device/bin/$b --only "$A|$ST" 2>&1 | grep -E " ms " >> $T
done
done
grep -E "^==| ms " $T | grep -v "launches\|CPU\|recipe step\|_amp" | awk '{print $1, $2, $3}'
cd tang-runtime
for t in dense_attention dense_attention_dropout; do
  timeout 100 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
done
