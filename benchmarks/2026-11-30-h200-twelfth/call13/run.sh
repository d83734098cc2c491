#!/bin/bash
source .device/prelude.sh
mkdir -p /tmp/c
.device/bin/shader-stats --cache /tmp/c .device/wgsl/*.wgsl > $OUT/stats.txt 2>&1
grep -E "^==|Register" $OUT/stats.txt
python3 .device/sass.py /tmp/c 2>&1 | tail -3
cp /tmp/c/*.sass $OUT/
grep -E "HMMA" $OUT/*.sass | head -3
