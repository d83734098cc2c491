#!/bin/bash
# Release tang-nn test binaries of ef4c814 with the PyTorch and Hugging Face fixtures carried (../shared/fixtures, copied to the path the binaries were built with).
source .device/prelude.sh
mkdir -p /work/shared/fixtures && cp -r .device/fixtures/* /work/shared/fixtures/ && ls /work/shared/fixtures
cd tang-nn
for t in gpt_parity hf_gpt2 attention_layers; do
  timeout 120 ../.device/bin/$t > $OUT/test-$t.txt 2>&1; echo "$t rc $? $(grep 'test result' $OUT/test-$t.txt)"
  grep -E "panicked|differ|>" $OUT/test-$t.txt | head -4
done
