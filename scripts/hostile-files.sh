#!/usr/bin/env bash
# Writes a folder of hostile and odd files and ingests it into a scratch data directory:
# the record behind docs/results/reliability.md. Usage: scripts/hostile-files.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
dir="${1:-$(mktemp -d)}"
mkdir -p "$dir/files"
python3 - "$dir/files" <<'PY'
import io, sys, zipfile, zlib
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
def one_page_pdf(name, content, self_prev=False):
    """A one-page PDF whose page's content stream is `content` (dictionary and data);
    `self_prev` makes the cross-reference section's /Prev point at itself."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>", content]
    pdf, offsets = b"%PDF-1.4\n", []
    for i, o in enumerate(objs):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n" % (i + 1) + o + b"\nendobj\n"
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    prev = b" /Prev %d" % xref if self_prev else b""
    pdf += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, prev, xref)
    open(f"{d}/{name}", "wb").write(pdf)
# A PDF whose one page inflates to 2 GiB of spaces: 2 MB on disk.
z = zlib.compressobj(9)
packed = b"".join(z.compress(b" " * (1 << 20)) for _ in range(2048)) + z.compress(b"BT (bomb) Tj ET") + z.flush()
one_page_pdf("bomb.pdf", b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream")
# Lists nested 3,000 deep (9 MB): the Markdown splitter's time grew faster than the text.
open(f"{d}/deeplist.md", "w").write("".join("  " * i + "- x\n" for i in range(3000)))
open(f"{d}/truncated.pdf", "wb").write(b"%PDF-1.4\n1 0 obj << /Type /Catalog")
open(f"{d}/empty.txt", "wb").write(b"")
open(f"{d}/latin1.txt", "wb").write("Café au lait, naïve façade: the Müller résumé costs 5 €.\n".encode("cp1252"))
open(f"{d}/utf16.txt", "wb").write("\ufeffUTF-16 text with a byte-order mark: Zürich.\n".encode("utf-16-le"))
open(f"{d}/ok.md", "w").write("# Fine\n\nA normal file.\n")
# Added 2026-12-01. Valid UTF-8 that is no text, and text in the wide encodings.
open(f"{d}/zeros.txt", "wb").write(b"\0" * 100_000)
open(f"{d}/utf16-nobom.txt", "wb").write("UTF-16 without a byte-order mark: Zürich.\n".encode("utf-16-le"))
open(f"{d}/utf32.txt", "wb").write("\ufeffUTF-32 with a byte-order mark: Zürich.\n".encode("utf-32-le"))
# 40 MB without a space: one [UNK] to the tokenizer, so one "five-token" chunk before.
open(f"{d}/oneword.txt", "wb").write(b"a" * (40 << 20))
# 100,000 script elements: the nesting pre-scan copied the rest of the page for each.
open(f"{d}/scripts.html", "wb").write(b"<html><body>" + b"<script>x</script><p>t</p>" * 100_000 + b"</body></html>")
# 300,000 nested <div>s with a script in each: the pre-scan counted each script's end tag
# as closing a level, so it saw a depth of 1 and the parser got the whole nest.
open(f"{d}/hidden-deep.html", "w").write("<html><body>" + "<div><script></script>" * 300_000 + "x</body></html>")
# A DOCX without word/_rels/document.xml.rels: docx-rs said only "Failed to read from zip."
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>')
    z.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>')
    z.writestr("word/document.xml", f'<?xml version="1.0"?><w:document {W}><w:body><w:p><w:r><w:t>No rels.</w:t></w:r></w:p></w:body></w:document>')
open(f"{d}/norels.docx", "wb").write(buf.getvalue())
# A PDF whose xref /Prev points at itself: pdf-extract panics on it (caught).
one_page_pdf("xrefloop.pdf", b"<< /Length 24 >>\nstream\nBT (loop text) Tj ET    \nendstream", self_prev=True)
# Added 2026-12-02. Encrypted PDFs (RC4, empty user password, as permission-restricted
# files are): lopdf loads them on a path of its own, without the load filter's caps.
import hashlib
PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
def rc4(key, data):
    S = list(range(256)); j = 0
    for i in range(256):
        j = (j + S[i] + key[i % len(key)]) & 255; S[i], S[j] = S[j], S[i]
    out = bytearray(len(data)); i = j = 0
    for n, b in enumerate(data):
        i = (i + 1) & 255; j = (j + S[i]) & 255; S[i], S[j] = S[j], S[i]
        out[n] = b ^ S[(S[i] + S[j]) & 255]
    return bytes(out)
ident, P = hashlib.md5(b"metarag").digest(), -4
O = rc4(hashlib.md5(PAD).digest()[:5], PAD)
key = hashlib.md5(PAD + O + (P & 0xFFFFFFFF).to_bytes(4, "little") + ident).digest()[:5]
U = rc4(key, PAD)
def sealed(num, data):
    return rc4(hashlib.md5(key + num.to_bytes(3, "little") + b"\0\0").digest()[:10], data)
encrypt = b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P %d >>" % (O.hex().encode(), U.hex().encode(), P)
ids = b"/ID [<%s> <%s>]" % (ident.hex().encode(), ident.hex().encode())
def stream(d, data):
    return b"<< %s /Length %d >>\nstream\n" % (d, len(data)) + data + b"\nendstream"
# One object stream that inflates to 2 GiB (2 MB on disk), reached through a
# cross-reference stream; lopdf expands it whole while loading.
z = zlib.compressobj(9)
packed = z.compress(b"7 0 << /Padding true >>") + b"".join(z.compress(b" " * (1 << 20)) for _ in range(2048)) + z.flush()
objs = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        4: stream(b"", sealed(4, b"BT (sealed) Tj ET")), 5: encrypt,
        6: stream(b"/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", sealed(6, packed))}
pdf, offs = b"%PDF-1.5\n", {}
for k, o in objs.items():
    offs[k] = len(pdf); pdf += b"%d 0 obj\n" % k + o + b"\nendobj\n"
offs[8] = len(pdf)
row = lambda t, f: bytes([t]) + f.to_bytes(4, "big") + b"\0\0"
rows = b"\0\0\0\0\0\xff\xff" + b"".join(row(1, offs[k]) for k in range(1, 7)) + row(2, 6) + row(1, offs[8])
pdf += b"8 0 obj\n" + stream(b"/Type /XRef /Size 9 /W [1 4 2] /Root 1 0 R /Encrypt 5 0 R " + ids, rows)
pdf += b"\nendobj\nstartxref\n%d\n%%%%EOF\n" % offs[8]
open(f"{d}/encrypted-bomb.pdf", "wb").write(pdf)
# 50,000 objects without `endobj` (2 MB): lopdf copies each from its header to the end of
# the file and keeps the copies, some 40 GB.
pdf, offs = bytearray(b"%PDF-1.4\n"), []
for k, o in [(1, encrypt), (2, b"<< /Type /Catalog /Pages 3 0 R >>")]:
    offs.append(len(pdf)); pdf += b"%d 0 obj\n" % k + o + b"\nendobj\n"
for k in range(3, 50_003):
    offs.append(len(pdf)); pdf += b"%d 0 obj\n(%010d)\n" % (k, k)
x = len(pdf)
pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(offs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offs)
pdf += b"trailer\n<< /Size %d /Root 2 0 R /Encrypt 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n" % (len(offs) + 1, ids, x)
open(f"{d}/noendobj.pdf", "wb").write(pdf)
# Added 2026-12-02, later.
# A cross-reference stream that inflates to 2 GiB (2 MB on disk): its rows, then zeros.
# lopdf inflates it whole before reading any object.
objs = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        4: b"<< /Length 23 >>\nstream\nBT (xref bomb) Tj ET\nendstream"}
pdf, offs = b"%PDF-1.5\n", {}
for k, o in objs.items():
    offs[k] = len(pdf); pdf += b"%d 0 obj\n" % k + o + b"\nendobj\n"
offs[5] = len(pdf)
row = lambda t, f: bytes([t]) + f.to_bytes(4, "big") + b"\0\0"
rows = b"\0\0\0\0\0\xff\xff" + b"".join(row(1, offs[k]) for k in range(1, 6))
z = zlib.compressobj(9)
packed = z.compress(rows) + b"".join(z.compress(b"\0" * (1 << 20)) for _ in range(2048)) + z.flush()
pdf += b"5 0 obj\n<< /Type /XRef /Size 6 /W [1 4 2] /Root 1 0 R /Filter /FlateDecode /Length %d >>\nstream\n" % len(packed)
pdf += packed + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % offs[5]
open(f"{d}/xref-bomb.pdf", "wb").write(pdf)
# The same without its /Type: lopdf reads any stream at a cross-reference offset as one.
open(f"{d}/xref-bomb-untyped.pdf", "wb").write(pdf.replace(b"/Type /XRef ", b""))
# 10 MB of "/XRef" markers: the pre-scan looked 4 KiB each way around every one.
open(f"{d}/xref-markers.pdf", "wb").write(b"%PDF-1.5\n" + b"/XRef " * 1_700_000)
PY
mkdir -p "$dir/home"
[ -e "$dir/home/models" ] || ln -s "$METARAG_HOME/models" "$dir/home/models"
set +e
METARAG_HOME="$dir/home" "$CARGO_TARGET_DIR/debug/metarag" ingest "$dir/files"
echo "exit code $? (3: finished, some files failed)"
