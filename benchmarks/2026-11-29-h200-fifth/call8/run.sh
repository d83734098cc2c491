#!/usr/bin/env bash
# Call 8: the in-place unscale's test and the portable widening's test on the H200.
source .device/prelude.sh
cd tang-runtime
timeout 100 ../.device/bin/dense_foreach --test-threads=2 > $OUT/test-dense_foreach.txt 2>&1; echo "dense_foreach rc $?"
timeout 200 ../.device/bin/dense_f16 --test-threads=2 the_portable f16_to_f32 f32_to_f16 > $OUT/test-dense_f16.txt 2>&1; echo "dense_f16 rc $?"
grep -hE "^test |test result" $OUT/*.txt
