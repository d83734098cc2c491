#!/bin/bash
source .device/prelude.sh
(cd tang-runtime && ../.device/bin/f16_native_narrowing --ignored --nocapture 2>&1 | tail -12) | tee $OUT/narrowing.txt
.device/bin/bench --only "gelu_tanh_fwd_64M|gelu_tanh_vjp_64M|gelu_tanh_fwd_f16_64M|gelu_tanh_vjp_f16_64M" 2>&1 | grep -v "^\s*$" | tee $OUT/gelu.txt | grep -E "gelu"
