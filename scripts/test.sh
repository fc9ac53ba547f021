#!/usr/bin/env bash
# The test command: formatting, lints, and every test (several run against the real
# local embedding model, which the tests fetch into the cache themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --no-fail-fast
