#!/bin/bash
# metarag vs standard on 12 tuning-half questions of each set, original and reworded
# (docs/results/program.md). Run from the repository root; resumable (the bench resumes a
# run whose record exists). The first planner's runs (docs/results/program/steps/) used the
# same command at 47d477b.
set -e
for ds in 2wikimultihopqa hotpotqa; do
  for w in original reworded; do
    metarag bench --dataset docs/results/program/$ds-$w-tune20.jsonl --mode gold --n 12 \
      --strategy standard,metarag --model qwen2.5-1.5b-instruct --out runs-program-$ds-$w $NO_CACHE
  done
done
