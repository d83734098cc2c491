#!/bin/bash
source .device/prelude.sh
.device/bin/shader-stats --cache $OUT/cache .device/wgsl/*.wgsl > $OUT/stats.txt 2>&1
cat $OUT/stats.txt | grep -v "^    [A-Z]" | head
python3 .device/sass.py $OUT/cache
ls -la $OUT/cache
for f in $OUT/cache/*.txt; do echo "== $f"; head -30 $f; done 2>/dev/null | head -80
