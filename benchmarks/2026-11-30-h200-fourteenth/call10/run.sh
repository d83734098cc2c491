#!/bin/bash
# bench = be8a352 plus keep-bits.diff (the dq pass makes its dropout decisions before its dP product and keeps them as one u32 of bits); bench-before = be8a352. Not kept.
source .device/prelude.sh
cd tang-runtime
for t in dense_attention_coop dense_attention_dropout dense_attention_split; do
  timeout 100 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
  grep -E "panicked|element" $OUT/test-$t.txt | head -4
done
cd ..
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd"
T=$OUT/tang.txt
for r in 1 2; do
for b in bench-before bench; do
  echo "== $b round $r" >> $T; timeout 60 .device/bin/$b --only "$A" >> $T 2>&1
done
done
grep -E "^==| ms |bwd_dq" $T | awk '{print $1, $2, $3, $4, $5}'
