#!/bin/bash
# Per-question time on open HotpotQA, tuning half, n=50: the build before issue 70 (ae00681,
# portable AVX2, grammar on every candidate) and HEAD, one after the other, no call cache.
set -e
NEW=$1
cd /work/main
for b in ae00681 $NEW; do
  /tmp/c.sh ~/.cache/metarag/bin/metarag-$b bench --dataset hotpotqa --mode open --split tuning --n 50 \
    --model qwen2.5-1.5b-instruct --strategy standard,metarag --no-cache \
    --out docs/results/llm-kernels/question-time/$b > /tmp/runs/timing-$b.log 2>&1
done
echo done
