#!/bin/bash
source .device/prelude.sh
.device/bin/smem-probe 2>&1 | tee $OUT/smem-probe.txt
