#!/usr/bin/env bash
# Writes a folder of hostile and odd files and ingests it into a scratch data directory:
# the record behind docs/results/reliability.md. Usage: scripts/hostile-files.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
dir="${1:-$(mktemp -d)}"
mkdir -p "$dir/files"
python3 - "$dir/files" <<'PY'
import io, sys, zipfile
d = sys.argv[1]
n = 300_000
open(f"{d}/deep.html", "w").write("<html><body>" + "<div>" * n + "deep text" + "</div>" * n + "</body></html>")
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("word/document.xml", "w") as f:
        for _ in range(200):
            f.write(b"a" * (1 << 20))
open(f"{d}/bomb.docx", "wb").write(buf.getvalue())
open(f"{d}/binary.txt", "wb").write(bytes(range(256)) * 10)
open(f"{d}/truncated.pdf", "wb").write(b"%PDF-1.4\n1 0 obj << /Type /Catalog")
open(f"{d}/empty.txt", "wb").write(b"")
open(f"{d}/latin1.txt", "wb").write("Café au lait, naïve façade: the Müller résumé costs 5 €.\n".encode("cp1252"))
open(f"{d}/utf16.txt", "wb").write("\ufeffUTF-16 text with a byte-order mark: Zürich.\n".encode("utf-16-le"))
open(f"{d}/ok.md", "w").write("# Fine\n\nA normal file.\n")
PY
mkdir -p "$dir/home"
[ -e "$dir/home/models" ] || ln -s "$METARAG_HOME/models" "$dir/home/models"
set +e
METARAG_HOME="$dir/home" "$CARGO_TARGET_DIR/debug/metarag" ingest "$dir/files"
echo "exit code $? (3: finished, some files failed)"
