#!/usr/bin/env bash
# Call 4: cross-entropy's recomputed backward (bench) against the build before it
# (bench-old, call 3's), interleaved; the release tests of the rows' f16 forms, the
# losses' gradients and the GPT against PyTorch on the H200; the char GPT trained in AMP
# and fp32.
source .device/prelude.sh
CASES="gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp|gpt2_124M_T1024_B8_step"
for r in 1 2; do
  for b in bench-old bench; do
    echo "== $b run $r"
    .device/bin/$b --only "$CASES" 2>&1 | grep -E "cross_entropy|mul \[|to_dtype_f16_narrow_v4 \[65535|total|^gpt|fail|pool"
  done
done > $OUT/steps.txt 2>&1
grep -E "^==|^gpt|pool" $OUT/steps.txt
mkdir -p /work/shared/fixtures/torch && cp .device/fixtures/* /work/shared/fixtures/torch/
(cd tang-runtime && ../.device/bin/dense_rows_f16 --test-threads=1 > $OUT/test-dense_rows_f16.txt 2>&1; tail -3 $OUT/test-dense_rows_f16.txt)
(cd tang-nn && ../.device/bin/loss_gradcheck --test-threads=1 > $OUT/test-loss_gradcheck.txt 2>&1; tail -3 $OUT/test-loss_gradcheck.txt)
(cd tang-nn && ../.device/bin/gpt_parity --test-threads=1 > $OUT/test-gpt_parity.txt 2>&1; tail -3 $OUT/test-gpt_parity.txt)
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt --amp > $OUT/train-amp.txt 2>&1; grep -E "best" $OUT/train-amp.txt; tail -2 $OUT/train-amp.txt
.device/bin/train_char_gpt --steps 2000 --data examples/data/rust-book.txt > $OUT/train-fp32.txt 2>&1; grep -E "best" $OUT/train-fp32.txt; tail -2 $OUT/train-fp32.txt
