#!/bin/bash
# The reporting-half twins of one data set, original and reworded wording, run in steps of
# STEP questions each in turn (original 1-10, reworded 1-10, original 11-20, ...), so a run
# stopped at any time holds the same questions in both wordings. Each step is the plain
# bench command below, stopped once its record holds the step's rows and resumed at the
# next (the bench resumes a run whose record exists). Run from the repository root with
# `metarag` on PATH:
#   bash docs/results/program/report/twins.sh musique runs-musique-OUT-SUFFIX
set -euo pipefail
ds=$1 suffix=$2 STEP=${STEP:-10} N=${N:-40}
R=docs/results/program/report
for ((k = STEP; k <= N; k += STEP)); do
  for w in original reworded; do
    out=$R/runs-$ds-$w-gold-$suffix
    rec=$out/$ds-gold-standard+metarag-qwen2.5-1.5b-instruct-n$N-s42.jsonl
    # One header line, then one row per strategy and question.
    want=$((1 + 2 * k))
    if [ -f "$rec" ] && [ "$(wc -l <"$rec")" -ge "$want" ]; then continue; fi
    metarag bench --dataset $R/$ds-$w-report.jsonl --mode gold --n $N \
      --model qwen2.5-1.5b-instruct --strategy standard,metarag --out "$out" &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
      if [ -f "$rec" ] && [ "$(wc -l <"$rec")" -ge "$want" ] && [ $k -lt $N ]; then
        kill $pid; wait $pid || true; break
      fi
      sleep 5
    done
    wait $pid 2>/dev/null || true
  done
done
