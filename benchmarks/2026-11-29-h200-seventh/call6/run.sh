#!/usr/bin/env bash
# Call 6: cross-entropy's backward in runs of eight elements (bench) against one word a
# thread (bench-old, call 4's build), interleaved; the rows' f16 release test.
source .device/prelude.sh
CASES="gpt2_124M_T1024_B8_step_amp|gpt2_124M_T1024_B8_step"
for r in 1 2; do
  for b in bench-old bench; do
    echo "== $b run $r"
    .device/bin/$b --only "$CASES" 2>&1 | grep -E "cross_entropy|total|^gpt|fail"
  done
done > $OUT/steps.txt 2>&1
cat $OUT/steps.txt
(cd tang-runtime && ../.device/bin/dense_rows_f16 --test-threads=1 > $OUT/test-dense_rows_f16.txt 2>&1; tail -3 $OUT/test-dense_rows_f16.txt)
