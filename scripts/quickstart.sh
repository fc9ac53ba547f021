#!/usr/bin/env bash
# The main job on a fresh machine: build metarag, fetch the local embedding model and chat
# model, ingest the bundled sample documents, search them and answer a question with
# citations (the MetaRAG strategy on the local model).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --quiet -p metarag-cli
metarag="$CARGO_TARGET_DIR/debug/metarag"
"$metarag" models pull
"$metarag" ingest examples/docs
"$metarag" search "who designed the Panama canal locks" --k 3
"$metarag" ask "Who designed the lock gates of the Panama Canal?"
