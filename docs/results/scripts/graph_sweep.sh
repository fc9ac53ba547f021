#!/usr/bin/env bash
# The entity graph's settings, chosen on the tuning halves, then measured once on the
# reporting halves. Writes docs/results/graph/*.json. Usage (from the repository root,
# after `. scripts/env.sh` and `cargo build -p metarag-cli`):
#   bash docs/results/scripts/graph_sweep.sh [metarag-binary]
# Each run reuses (or builds once) the corpus's benchmark index, or $INDEX_ROOT/<dataset>
# when set (a copy, beside a QA benchmark holding the default one); about 10 s each.
set -euo pipefail
B=${1:-$CARGO_TARGET_DIR/debug/metarag}
OUT=docs/results/graph
QA=data/qa
mkdir -p "$OUT"
run() { # dataset split modes name [VAR=value ...]
  local d=$1 split=$2 modes=$3 name=$4
  shift 4
  local index=()
  if [ -n "${INDEX_ROOT:-}" ]; then index=(--index "$INDEX_ROOT/$d"); fi
  env "$@" "$B" bench retrieval --corpus "$QA/$d-corpus.jsonl" --questions "$QA/$d-dev.jsonl" \
    "${index[@]}" --split "$split" --modes "$modes" --out "$OUT/$d-$split-$name.json" | tail -n +3
}
for d in hotpotqa 2wikimultihopqa; do
  # 1. The walk: hops and frontier (graph weight 0.5, the seed's share).
  for f in 16 64 128; do
    for h in 1 2; do
      echo "$d tuning: frontier $f, hops $h"
      run "$d" tuning graph,hybrid "frontier$f-hops$h" METARAG_RETRIEVAL__GRAPH_WEIGHT=0.5 \
        METARAG_RETRIEVAL__GRAPH__FRONTIER=$f METARAG_RETRIEVAL__GRAPH__MAX_HOPS=$h
    done
  done
  # 2. The fusion weight of the graph list (defaults for the walk).
  for w in 0 0.5 1 1.5 2 3; do
    echo "$d tuning: graph weight $w"
    run "$d" tuning hybrid "weight$w" METARAG_RETRIEVAL__GRAPH_WEIGHT=$w
  done
  # 3. Reporting half, once: without the graph and with the defaults.
  echo "$d reporting: without the graph"
  run "$d" reporting bm25,dense,graph,hybrid graph-weight-0 METARAG_RETRIEVAL__GRAPH_WEIGHT=0
  echo "$d reporting: defaults"
  run "$d" reporting bm25,dense,graph,hybrid defaults
done
