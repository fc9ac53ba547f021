#!/usr/bin/env bash
# The main job on a fresh machine: build metarag, fetch the local embedding model and chat
# model, ingest the bundled sample documents, search them and ask the local model.
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
"$metarag" chat "Which country is the director of Jaws from?"
