#!/usr/bin/env bash
# Ingest wall time of two metarag binaries on the HotpotQA corpus, alternately, each into a
# fresh data directory (the models linked from $METARAG_HOME), ROUNDS times; one JSON line per
# run with wall, CPU and peak RSS (/usr/bin/time) and the ingest report's own seconds.
#
#   OLD=/tmp/metarag-old NEW=/tmp/metarag-new ROUNDS=2 bash docs/results/scripts/ingest_ab.sh > ab.jsonl
#
# Build each binary from its commit first (`cargo build -p metarag-cli`, then copy
# $CARGO_TARGET_DIR/debug/metarag). Run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../../.."
. scripts/env.sh
corpus="${CORPUS:-data/qa/hotpotqa-corpus.jsonl}"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for which in old new; do
    bin="$OLD"; [ "$which" = new ] && bin="$NEW"
    home=$(mktemp -d /tmp/ab-home-XXXX)
    ln -s "$METARAG_HOME/models" "$home/models"
    METARAG_HOME=$home /usr/bin/time -f "%e %M %U %S" -o "$home/time.txt" \
      "$bin" ingest "$corpus" --json > "$home/out.json" 2> "$home/err.txt"
    python3 - "$which" "$round" "$home" <<'PY'
import json, sys
which, rnd, home = sys.argv[1], int(sys.argv[2]), sys.argv[3]
r = json.load(open(f"{home}/out.json"))
rep = r.get("report", r)
wall, rss, user, sys_ = open(f"{home}/time.txt").read().split()
print(json.dumps({"binary": which, "round": rnd, "wall_s": float(wall), "peak_rss_kb": int(rss),
                  "cpu_s": float(user) + float(sys_), "seconds": rep.get("seconds"),
                  "embed_seconds": rep.get("embed_seconds"), "chunks": rep.get("chunks"),
                  "tokens": rep.get("tokens"), "load": open("/proc/loadavg").read().strip()}))
PY
    rm -rf "$home"
  done
done
