#!/bin/bash
# bench = f9784d1 before the passes apart took the split kernels (dense_attention's
# backward_passes_apart_match_the_backward failed: the FMA passes' bits).
source .device/prelude.sh
cd tang-runtime
for t in dense_attention_split dense_attention dense_attention_dropout; do
  timeout 120 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
done
cd ..
A="attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_fwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd"
echo "== bench" >> $OUT/tang.txt; timeout 90 .device/bin/bench --only "$A" >> $OUT/tang.txt 2>&1
