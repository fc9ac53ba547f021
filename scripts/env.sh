# Sourced by the other scripts: caches live outside the clone so later runs reuse them.
export METARAG_CACHE="${METARAG_CACHE:-$HOME/.cache/metarag}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$METARAG_CACHE/target}"
# The data directory of the quickstart and the model cache the tests share.
export METARAG_HOME="${METARAG_HOME:-$METARAG_CACHE/home}"
export METARAG_TEST_MODELS="${METARAG_TEST_MODELS:-$METARAG_HOME/models}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Cargo reuses a build made from another checkout of this repository when the sources
# here are older than that build, and the build keeps the other checkout's paths
# (`env!("CARGO_MANIFEST_DIR")`: the tests' data and fixtures, insta's snapshots), so
# tests fail on files that are not there. When the shared target directory was last used
# from another checkout, this one's workspace sources are touched, and cargo rebuilds
# the workspace's crates (not the dependencies).
# The checkout is found from this file's path; `$BASH_SOURCE` without an index reads the
# same in bash and is simply unset in sh (dash), where the working directory is used if
# it is a checkout. Found neither way, the mark is left alone (a wrong root, such as "/",
# would touch nothing and record a checkout that is not there).
if [ -n "${BASH_SOURCE:-}" ]; then
  metarag_root="$(cd "$(dirname "$BASH_SOURCE")/.." && pwd -P)"
elif [ -f scripts/env.sh ] && [ -d crates ]; then
  metarag_root="$(pwd -P)"
else
  metarag_root=""
fi
metarag_mark="$CARGO_TARGET_DIR/.metarag-checkout"
if [ -n "$metarag_root" ]; then
  if [ -f "$metarag_mark" ] && [ "$(cat "$metarag_mark")" != "$metarag_root" ]; then
    echo "env: $CARGO_TARGET_DIR was last built from $(cat "$metarag_mark"); rebuilding this checkout's crates" >&2
    find "$metarag_root/crates" "$metarag_root/fuzz" -name '*.rs' -exec touch {} +
  fi
  mkdir -p "$CARGO_TARGET_DIR" && printf '%s\n' "$metarag_root" >"$metarag_mark"
fi
unset metarag_root metarag_mark
