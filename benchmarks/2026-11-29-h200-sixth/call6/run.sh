#!/usr/bin/env bash
# Call 6: selects on uniform conditions as if/else blocks (bench, the optimizers' exact
# multiply-add skipped where fma is fused) against the build before (bench-old, 9db501f),
# interleaved; the optimizers' PyTorch parity test on the H200.
source .device/prelude.sh
CASES="adam_step|gpt_char_6x384_T256_B64_step_amp|gpt2_124M_T1024_B8_step_amp"
for r in 1 2; do
  for b in bench-old bench; do
    echo "== $b run $r"
    .device/bin/$b --only "$CASES" 2>&1 | grep -E "adam|total|^gpt|fail"
  done
done > $OUT/steps.txt 2>&1
grep -E "^==|^adam|^gpt_|^gpt2_124M_T1024_B8_step_amp |adam_update" $OUT/steps.txt
mkdir -p /work/shared/fixtures/torch && cp .device/fixtures/* /work/shared/fixtures/torch/ && ls /work/shared/fixtures/torch
cd tang-nn && ../.device/bin/optim_parity --test-threads=1 > $OUT/test-optim_parity.txt 2>&1; tail -14 $OUT/test-optim_parity.txt
