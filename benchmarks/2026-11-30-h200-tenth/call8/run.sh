#!/bin/bash
source .device/prelude.sh
mkdir -p /tmp/t && tar -xJf .device/tests.tar.xz -C /tmp/t
(cd tang-runtime && for t in dense_attention_coop dense_attention_dropout dense_attention_f16 dense_attention; do echo "== $t"; timeout 45 /tmp/t/tests/$t 2>&1 | grep -E "test result|FAILED|panicked" ; done; echo "== dense_f16 attention"; timeout 20 /tmp/t/tests/dense_f16 attention 2>&1 | grep -E "test result|FAILED|panicked") > $OUT/tests.txt 2>&1
cat $OUT/tests.txt
