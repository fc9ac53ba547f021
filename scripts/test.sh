#!/usr/bin/env bash
# The test command: formatting, lints, and every test (several run against the real
# local embedding model, which the tests fetch into the cache themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
bash scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
# The web page's test drives headless Chromium through chromedriver (Debian's packages).
if ! command -v chromedriver >/dev/null 2>&1 && [ -z "${METARAG_SKIP_BROWSER:-}" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "test: installing chromium chromium-driver for the browser test" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver
fi
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
