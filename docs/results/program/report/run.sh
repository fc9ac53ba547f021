#!/bin/bash
# Reporting-half runs of issue 67 (docs/results/program.md, "Reporting half"). Run from the
# repository root with `metarag` on PATH; resumable: the bench resumes a run whose record
# exists, so rerunning this script continues where it stopped. The question files beside it
# are the reporting-half records of data/qa/*-reworded.jsonl (split by original_id) and
# their originals from data/qa/*-dev.jsonl, in the same order.
set -e
R=docs/results/program/report
M="--model qwen2.5-1.5b-instruct --strategy standard,metarag"
for ds in 2wikimultihopqa hotpotqa musique; do
  for w in original reworded; do
    [ "$ds" = 2wikimultihopqa ] || [ -n "$ALL" ] || continue
    metarag bench --dataset $R/$ds-$w-report.jsonl --mode gold --n 40 $M --out $R/runs-$ds-$w-gold
  done
done
metarag bench --dataset 2wikimultihopqa --split reporting --mode gold --n 100 $M --out $R/runs-2wikimultihopqa-gold-n100
metarag bench --dataset hotpotqa --split reporting --mode open --n 100 $M --out $R/runs-hotpotqa-open-n100
