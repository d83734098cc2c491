#!/bin/bash
source .device/prelude.sh
mkdir -p /tmp/c
.device/bin/shader-stats --cache /tmp/c .device/wgsl/*.wgsl > $OUT/stats.txt 2>&1
grep -E "^==|Register|Shared" $OUT/stats.txt
python3 .device/sass.py /tmp/c 2>&1 | tail -6
rm -f /tmp/c/*.cache /tmp/c/*.bin; tar czf $OUT/sass.tgz -C /tmp/c .
