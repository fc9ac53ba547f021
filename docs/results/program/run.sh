#!/bin/bash
# metarag vs standard on the same 12 2Wiki tuning-half questions, original and reworded
# (docs/results/program.md). Run from the repository root; resumable (the bench resumes a
# run whose record exists).
set -e
for w in original reworded; do
  metarag bench --dataset docs/results/program/2wikimultihopqa-$w-tune20.jsonl --mode gold --n 12 \
    --strategy standard,metarag --model qwen2.5-1.5b-instruct --out runs-program-$w
done
