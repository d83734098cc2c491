#!/bin/bash
# Release test binaries of 8addb19 (the review: variant choice in Coop::pick, maxima_for, coop_bwd_launch.rs).
source .device/prelude.sh
cd tang-runtime
for t in dense_attention_split dense_attention dense_attention_coop; do
  timeout 60 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
done
timeout 30 ../.device/bin/runtime_lib maxima > $OUT/test-maxima.txt 2>&1; echo "maxima rc $? $(grep 'test result' $OUT/test-maxima.txt)"
cd ../tang-nn
timeout 40 ../.device/bin/attention_gradcheck > $OUT/test-attention_gradcheck.txt 2>&1; echo "gradcheck rc $? $(grep 'test result' $OUT/test-attention_gradcheck.txt)"
