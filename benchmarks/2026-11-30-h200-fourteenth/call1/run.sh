#!/bin/bash
# bench = main (ed5464d) plus the experiment in x3.diff: with TANG_X3 set, every
# cooperative-matrix product of the f16 attention kernels gains two more products by a
# zero fragment (loaded from workgroup memory, so the driver cannot drop them): the cost
# of three tensor-core products per product, the split f32 design's.
source .device/prelude.sh
A="attention_B8_H8_T1024_d64_fwd_bwd_f16|attention_B8_H8_T1024_d64_dropout_fwd_bwd_f16|attention_gpt2_B8_H12_T1024_d64_fwd_bwd_f16|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_autocast|attention_gpt_B64_H6_T256_d64_fused_fwd_bwd_f16|attention_B8_H8_T1024_d64_f16_fwd"
T=$OUT/tang.txt
for r in 1 2; do
for x in 0 1; do
  echo "== x3=$x round $r" >> $T
  if [ $x = 1 ]; then export TANG_X3=1; else unset TANG_X3; fi
  timeout 80 .device/bin/bench --only "$A" 2>&1 | grep -E " ms |error|mismatch" >> $T
done
done
