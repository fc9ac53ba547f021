#!/usr/bin/env bash
# Fuzzes the document parsers, the chunker and the citation parser with cargo-fuzz
# (libFuzzer), each target for SECONDS (default 300), and writes one JSON line per target
# to docs/results/fuzz-runs.jsonl: executions, corpus size, crashes.
#
#   bash scripts/fuzz.sh 600                  # every target, 10 minutes each
#   bash scripts/fuzz.sh 60 parse_html chunk  # some targets
#
# Installs cargo-fuzz (into $METARAG_CACHE/tools) and the nightly toolchain when missing.
# The growing corpus is kept in $METARAG_CACHE/fuzz/corpus (seeds: fuzz/seeds); an input
# that crashes is left in $METARAG_CACHE/fuzz/artifacts/TARGET/ and the script exits 1:
# copy it into fuzz/regressions/TARGET/ (ingest's tests replay every file there), fix,
# rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh

secs="${1:-300}"
shift || true
tools="$METARAG_CACHE/tools"
export PATH="$tools/bin:$PATH"
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked --version 0.13.2 --root "$tools"
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi

# The chunker target splits with the default embedder's own tokenizer.
export METARAG_FUZZ_TOKENIZER="$METARAG_HOME/models/all-minilm-l6-v2/tokenizer.json"
if [ ! -f "$METARAG_FUZZ_TOKENIZER" ]; then
  cargo run -q --bin metarag -- models pull all-minilm-l6-v2
fi

# Its own target directory: sanitizer builds must not evict the main build's artifacts.
export CARGO_TARGET_DIR="$METARAG_CACHE/fuzz-target"
work="$METARAG_CACHE/fuzz"
out="docs/results/fuzz-runs.jsonl"
mkdir -p "$(dirname "$out")"

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi

failed=0
for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  artifacts="$work/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts"
  log="$work/$t.log"
  echo "== $t: $secs s"
  status=0
  started=$SECONDS
  since=$(date +%s)
  features=()
  [ "$t" = citations ] && features=(--features citations)
  (cd fuzz && cargo +nightly fuzz run "${features[@]}" "$t" "$corpus" "seeds/$t" -- \
    -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -max_len=262144 \
    -artifact_prefix="$artifacts" -print_final_stats=1) >"$log" 2>&1 || status=$?
  # The time it fuzzed, as libFuzzer reports it ("Done N runs in S second(s)"): not the
  # time asked for (a crash ends a run early), nor the wall time, which includes building
  # the target (seven minutes from a cold cache). The wall time when it said nothing.
  ran=$(grep -a -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*$' | tail -1 || true)
  ran=${ran:-$((SECONDS - started))}
  # -a: a parser's log can hold bytes of its inputs, and grep would only say "binary file
  # matches"; || true: a run that died before its stats must still be recorded (pipefail).
  runs=$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  # Only this run's: inputs left by an earlier run stay until someone moves them. A
  # `slow-unit-*` is an input that took long, not a failure (-timeout makes those).
  crashes=$(find "$artifacts" -type f -newermt "@$since" ! -name 'slow-unit-*' | wc -l)
  inputs=$(find "$corpus" -type f | wc -l)
  printf '{"date":"%s","commit":"%s","target":"%s","seconds":%s,"executions":%s,"corpus":%s,"crashes":%s,"exit":%s}\n' \
    "$(date -u +%FT%TZ)" "$(git rev-parse --short HEAD)" "$t" "$ran" "${runs:-0}" "$inputs" "$crashes" "$status" >>"$out"
  tail -1 "$out"
  if [ "$status" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    failed=1
    echo "$t: crash or failure; see $log and $artifacts" >&2
  fi
done
exit "$failed"
