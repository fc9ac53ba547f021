#!/bin/bash
# metarag vs standard on the same 12 2Wiki tuning-half questions, original and reworded.
export METARAG_HOME=~/.cache/metarag/home
for w in original reworded; do
  /tmp/bench/metarag bench --dataset /tmp/bench/2wikimultihopqa-$w-tune20.jsonl --mode gold --n 12 \
    --strategy standard,metarag --model qwen2.5-1.5b-instruct --out /tmp/bench/runs-$w > /tmp/bench/$w.log 2>&1
done
echo done > /tmp/bench/finished
