#!/usr/bin/env bash
# Peak memory of `metarag ingest` on one 60 MB file (issue 15). Writes the file into a
# scratch folder and ingests it into a scratch data directory under `/usr/bin/time -v`.
#
#   bash scripts/large-file.sh html   # a saved web page: 60 MB, mostly inline script,
#                                     # styles and a base64 image, ~3 MB of prose in tables
#   bash scripts/large-file.sh text   # 60 MB of prose (~15 M tokens: about half an hour
#                                     # of embedding on two cores)
#
# Prints the ingest summary, the peak RSS and the RSS every 10 s (the curve shows which
# phase holds the memory: parsing and chunking, embedding, the write); the text is
# generated from the QA corpora's passages, so it reads like real documents and chunks
# like them. SIZE_MB=6 makes a smaller file of the same kind.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
kind="${1:-html}"
dir="$(mktemp -d /tmp/metarag-large-XXXX)"
mkdir -p "$dir/files" "$dir/home"
ln -s "$METARAG_HOME/models" "$dir/home/models"
python3 - "$dir/files" "$kind" "${SIZE_MB:-60}" <<'PY'
import base64, json, random, sys
out, kind, size_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
random.seed(42)
passages = []
for corpus in ["hotpotqa", "2wikimultihopqa", "musique"]:
    for line in open(f"data/qa/{corpus}-corpus.jsonl"):
        r = json.loads(line)
        passages.append((r["title"], r["text"]))
target = size_mb * 1024 * 1024
if kind == "text":
    with open(f"{out}/large.md", "w") as f:
        size, i = 0, 0
        while size < target:
            t, x = passages[i % len(passages)]
            block = f"## {t} ({i // len(passages)})\n\n{x}\n\n"
            f.write(block)
            size += len(block.encode())
            i += 1
else:
    with open(f"{out}/large.html", "w") as f:
        f.write("<html><head><title>A saved page</title><style>")
        f.write(".c{color:#333}" * (4 * 1024 * 1024 // 14))
        f.write("</style><script>")
        f.write("var d=[" + ",".join(str(random.random()) for _ in range(1_000_000)) + "];")
        f.write("</script></head><body>")
        img = base64.b64encode(random.randbytes(20 * 1024 * 1024)).decode()
        f.write(f'<img alt="figure" src="data:image/png;base64,{img}">')
        prose = 0
        for i, (t, x) in enumerate(passages):
            if prose > 3 * 1024 * 1024:
                break
            f.write(f'<h2>{t}</h2><table class="c"><tr><td class="c">{x}</td></tr></table>')
            prose += len(x)
        size = f.tell()
        pad = "<div class='c' data-x='" + "x" * 200 + "'></div>"
        while size < target:
            f.write(pad)
            size += len(pad)
        f.write("</body></html>")
PY
ls -l "$dir/files"
set +e
METARAG_HOME="$dir/home" /usr/bin/time -v "$CARGO_TARGET_DIR/debug/metarag" ingest "$dir/files" \
  2> >(grep -E "Maximum resident|Elapsed|files:|warning|error" >&2) &
job=$!
start=$SECONDS
while kill -0 "$job" 2>/dev/null; do
  pid="$(pgrep -f "^$CARGO_TARGET_DIR/debug/metarag ingest $dir/files" | head -1)"
  [ -n "$pid" ] && echo "rss at $((SECONDS - start)) s: $(($(ps -o rss= -p "$pid" 2>/dev/null || echo 0) / 1024)) MB" >&2
  sleep 10
done
wait "$job"
echo "exit code $?"
rm -rf "$dir"
