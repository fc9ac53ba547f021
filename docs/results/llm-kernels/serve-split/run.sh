#!/bin/bash
# Search latency while asks run, by how the two cores are split between the local model
# and the query embedder (issue 70). Run from the repository root, nothing else running,
# with METARAG_HOME pointing at a data directory holding an index (here: the first 1,500
# passages of data/qa/hotpotqa-corpus.jsonl, `metarag ingest --format corpus-jsonl`) and
# the installed models. METARAG names the binary (default: metarag on PATH).
set -euo pipefail
B=${METARAG:-metarag}
Q=docs/results/server-questions.txt
out=${OUT:-docs/results/llm-kernels/serve-split}
mkdir -p "$out"
load() { "$B" --json bench load --questions $Q --searches 300 --search-concurrency 1 "$@"; }
load --asks 0 --out "$out/alone.md" > "$out/alone.json"
METARAG_LLM__THREADS=2 load --asks 3 --ask-concurrency 1 --out "$out/llm2-rayon2.md" > "$out/llm2-rayon2.json"
METARAG_LLM__THREADS=1 load --asks 3 --ask-concurrency 1 --out "$out/llm1-rayon2.md" > "$out/llm1-rayon2.json"
METARAG_LLM__THREADS=1 RAYON_NUM_THREADS=1 load --asks 3 --ask-concurrency 1 \
  --out "$out/llm1-rayon1.md" > "$out/llm1-rayon1.json"
