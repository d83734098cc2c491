#!/bin/bash
# bench = the maxima in one launch per pass (this commit); bench-before = a16bd7e (seven launches).
source .device/prelude.sh
cd tang-runtime
for t in dense_attention_split dense_attention; do
  timeout 120 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
  grep -E "panicked|element" $OUT/test-$t.txt | head -4
done
timeout 60 ../.device/bin/runtime_lib maxima > $OUT/test-maxima.txt 2>&1; echo "maxima rc $? $(grep 'test result' $OUT/test-maxima.txt)"
cd ..
A="attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 100 .device/bin/$b --only "$A|gpt_recipe_6x384_T256_B64" >> $T 2>&1
done
done
grep -E "^==| ms |split_maxima" $T | grep -v "launches\|CPU\|recipe step" | awk '{print $1, $2, $3, $4, $5}'
