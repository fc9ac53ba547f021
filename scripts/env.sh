# Sourced by the other scripts: caches live outside the clone so later runs reuse them.
export METARAG_CACHE="${METARAG_CACHE:-$HOME/.cache/metarag}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$METARAG_CACHE/target}"
# The data directory of the quickstart and the model cache the tests share.
export METARAG_HOME="${METARAG_HOME:-$METARAG_CACHE/home}"
export METARAG_TEST_MODELS="${METARAG_TEST_MODELS:-$METARAG_HOME/models}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
