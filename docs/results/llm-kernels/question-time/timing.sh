#!/bin/bash
# Per-question time on open HotpotQA, tuning half, n = 50, for two builds one after the other
# on one machine, no call cache. Each argument is a commit whose binary was copied to
# ~/.cache/metarag/bin/metarag-<commit> (e.g. `timing.sh ae00681 a471268`: before issue 70,
# and after). Run from the repository root with nothing else on the machine.
set -e
for b in "$@"; do
  ~/.cache/metarag/bin/metarag-"$b" bench --dataset hotpotqa --mode open --split tuning --n 50 \
    --model qwen2.5-1.5b-instruct --strategy standard,metarag --no-cache \
    --out docs/results/llm-kernels/question-time/"$b"
done
