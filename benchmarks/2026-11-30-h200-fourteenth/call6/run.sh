#!/bin/bash
# bench = main at eaf2b93 (the attention cases print their GPU time by kernel);
# bench-exp = that plus lane-experiments.diff: with TANG_EXP=nosoft the f16 forward's lanes
# skip the softmax arithmetic (P = the scaled scores), with TANG_EXP=nolane they skip
# reading the scores and writing P altogether (P stays whatever the scratch holds), and
# the bench skips its result check: what the lane work costs. Not kept (experiments).
source .device/prelude.sh
P="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_B8_H8_T1024_d64_fwd_bwd|attention_B8_H8_T1024_d64_dropout_fwd_bwd|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_dropout_fwd_bwd_f16"
timeout 120 .device/bin/bench --only "$P" > $OUT/profile.txt 2>&1
F="attention_B8_H8_T1024_d64_f16_fwd|attention_B8_H8_T1024_d64_dropout_f16_fwd|attention_gpt2_B8_H12_T1024_d64_f16_fwd"
T=$OUT/exp.txt
for r in 1 2; do
for e in main nosoft nolane; do
  echo "== $e round $r" >> $T
  if [ $e = main ]; then unset TANG_EXP; else export TANG_EXP=$e; fi
  timeout 60 .device/bin/bench-exp --only "$F" 2>&1 | grep -E " ms |error" >> $T
done
done
