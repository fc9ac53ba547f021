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
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line over every test binary (cargo prints one summary per binary, and the
# last is often a crate's empty doc-test run).
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
