#!/usr/bin/env bash
# Builds data/docs/manpages-corpus.jsonl: the section 1, 5 and 8 manual pages of a fixed list of
# Debian packages, rendered to plain text and split into passages by section heading, and
# data/docs/PROVENANCE.md (package versions, .deb checksums, licences, corpus checksum).
#
#   scripts/build-docs-corpus.sh [OUT_DIR]      (default: data/docs beside this script)
#
# Needs: apt-get (with package lists for the Debian release, i.e. `apt-get update` done once
# as root), dpkg-deb, man-db's `man`, groff, python3. No root: `apt-get download` writes the
# .deb files into a temporary directory and `dpkg-deb -x` unpacks them there; nothing is
# installed. The versions fetched are whatever the machine's apt sources offer, so a rebuild on
# another day or release may differ: PROVENANCE.md records what this build used.
#
# Environment: JOBS (parallel `man` renderings, default 2), KEEP_WORK=1 keeps the temp dir.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/data/docs}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# Well-known command-line packages a team would search the manuals of.
PACKAGES=(
  coreutils findutils grep sed gawk diffutils less
  tar gzip bzip2 xz-utils zstd zip unzip
  rsync curl wget openssh-client openssh-server
  git-man
  util-linux mount fdisk bsdutils bsdextrautils procps psmisc lsof strace
  iproute2 iptables nftables tcpdump net-tools iputils-ping bind9-dnsutils
  cron sudo passwd login adduser man-db
  systemd kmod
  dpkg apt
  e2fsprogs xfsprogs btrfs-progs lvm2 dmsetup
  bash tmux make jq
)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/docs-corpus.XXXXXX")
if [[ "${KEEP_WORK:-0}" == 1 ]]; then
  echo "work dir: $WORK" >&2
else
  trap 'rm -rf "$WORK"' EXIT
fi

mkdir -p "$WORK/debs" "$WORK/root" "$WORK/extra"
echo "downloading ${#PACKAGES[@]} packages" >&2
(cd "$WORK/debs" && apt-get download -q "${PACKAGES[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || {
  echo "apt-get download failed (stale package lists? run 'apt-get update' as root)" >&2
  exit 1
}
for deb in "$WORK"/debs/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  mkdir -p "$WORK/root/$pkg"
  dpkg-deb -x "$deb" "$WORK/root/$pkg"
done

# Some packages ship /usr/share/doc/PKG as a symlink to another package's directory (kmod ->
# libkmod2): fetch that package too, for its copyright file only.
for pkg in "${PACKAGES[@]}"; do
  d="$WORK/root/$pkg/usr/share/doc/$pkg"
  if [[ -L "$d" ]]; then
    target=$(basename "$(readlink "$d")")
    if [[ ! -e "$WORK/root/$target" && ! -e "$WORK/extra/$target" ]]; then
      (cd "$WORK/debs" && mkdir -p extra && cd extra && apt-get download -q "$target" 2>&1 |
        grep -v '^W: Download is performed unsandboxed' >&2) || true
      for x in "$WORK"/debs/extra/"${target}"_*.deb; do
        [[ -e "$x" ]] && mkdir -p "$WORK/extra/$target" && dpkg-deb -x "$x" "$WORK/extra/$target"
      done
    fi
  fi
done

export LC_ALL=C.UTF-8
python3 - "$WORK" "$OUT" "${PACKAGES[@]}" <<'PY'
import concurrent.futures as cf
import datetime
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys

work, out_dir, packages = sys.argv[1], sys.argv[2], sys.argv[3:]
SECTIONS = ("1", "5", "8")
TARGET = 1500      # passage size aimed at (characters)
MAX_SINGLE = 1800  # a whole section up to this size stays one passage
SUB_FLUSH = 400    # a subsection heading starts a new passage once this much is gathered

def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()

debs = {}
for name in sorted(os.listdir(os.path.join(work, "debs"))):
    if name.endswith(".deb"):
        p = os.path.join(work, "debs", name)
        debs[deb_field(p, "Package")] = p
missing = [p for p in packages if p not in debs]
if missing:
    sys.exit(f"not downloaded: {missing}")

# ---- collect the pages -------------------------------------------------------------------
def page_source(path):
    with open(path, "rb") as f:
        raw = f.read()
    return gzip.decompress(raw) if path.endswith(".gz") else raw

def is_stub(src):
    lines = [l for l in src.decode("utf-8", "replace").splitlines()
             if l.strip() and not l.startswith(('.\\"', "'\\\""))]
    return len(lines) <= 2 and any(l.startswith(".so ") for l in lines)

pages, seen_src = [], {}
for pkg in packages:
    base = os.path.join(work, "root", pkg, "usr", "share", "man")
    cands = []
    for sec in SECTIONS:
        d = os.path.join(base, "man" + sec)
        if not os.path.isdir(d):
            continue
        for fn in os.listdir(d):
            full = os.path.join(d, fn)
            if os.path.islink(full) or not os.path.isfile(full):
                continue
            stem = fn[:-3] if fn.endswith(".gz") else fn
            m = re.match(r"^(.+)\.(" + sec + r"[a-z]*)$", stem)
            if not m:
                continue
            cands.append((m.group(1), m.group(2), full))
    # identical sources (zstd.1 == unzstd.1): keep the shortest name
    for name, sec, full in sorted(cands, key=lambda c: (len(c[0]), c[0], c[1])):
        src = page_source(full)
        if is_stub(src):
            continue
        h = hashlib.sha256(src).hexdigest()
        if h in seen_src:
            continue
        seen_src[h] = f"{name}({sec})"
        pages.append({"package": pkg, "name": name, "section": sec, "path": full, "base": base})

# ---- render ------------------------------------------------------------------------------
ENV = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="10000", MANROFFOPT="-rHY=0",
           MANPAGER="cat", PAGER="cat")
ENV.pop("MAN_KEEP_FORMATTING", None)

def render(page):
    r = subprocess.run(["man", "-l", page["path"]], cwd=page["base"], env=ENV,
                       capture_output=True, timeout=120)
    text = r.stdout.decode("utf-8", "replace")
    text = re.sub(r".\x08", "", text)             # overstrike bold / underline
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)  # SGR, should there be any
    return text

jobs = int(os.environ.get("JOBS", "2"))
with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
    rendered = list(ex.map(render, pages))

# ---- split into passages -----------------------------------------------------------------
def norm_line(l):
    l = l.rstrip()
    l = re.sub(r" {5,}", "    ", l.lstrip())
    return l

def sections_of(text):
    lines = text.split("\n")
    nonempty = [i for i, l in enumerate(lines) if l.strip()]
    if not nonempty:
        return []
    first, last = nonempty[0], nonempty[-1]
    if re.search(r"\)\s*$", lines[first]):     # running header NAME(1) ... NAME(1)
        lines[first] = ""
    if not lines[last][0].isspace() and (re.search(r"\)\s*$", lines[last])
                                         or re.search(r"\s{3,}", lines[last].strip())):
        lines[last] = ""                       # running footer
    secs, cur = [], None
    para = []

    def end_para():
        nonlocal para
        if para and cur is not None:
            cur["paras"].append(("p", "\n".join(para)))
        para = []

    for l in lines:
        if not l.strip():
            end_para()
            continue
        if not l[0].isspace():
            end_para()
            cur = {"heading": re.sub(r"\s+", " ", l.strip()), "paras": []}
            secs.append(cur)
            continue
        if re.match(r"^ {3}\S", l) and cur is not None:
            end_para()
            cur["paras"].append(("sub", re.sub(r"\s+", " ", l.strip())))
            continue
        para.append(norm_line(l))
    end_para()
    return [s for s in secs if s["paras"]]

def split_long(p):
    """A paragraph over 2,500 characters: cut at line ends, else at sentence ends."""
    if len(p) <= 2500:
        return [p]
    units = p.split("\n") if p.count("\n") >= 3 else re.split(r"(?<=[.;:])\s+(?=\S)", p)
    sep = "\n" if p.count("\n") >= 3 else " "
    out, cur = [], ""
    for u in units:
        if cur and len(cur) + len(u) + 1 > TARGET:
            out.append(cur)
            cur = u
        else:
            cur = f"{cur}{sep}{u}" if cur else u
    if cur:
        out.append(cur)
    return out

def chunks_of(sec):
    total = sum(len(t) + 2 for _, t in sec["paras"])
    if total <= MAX_SINGLE:
        return [(None, "\n\n".join(t for _, t in sec["paras"]))]
    out, cur, cur_len, cur_sub, sub = [], [], 0, None, None

    def flush():
        nonlocal cur, cur_len
        if cur and not all(k == "sub" for k, _ in cur):
            out.append((cur_sub, "\n\n".join(t for _, t in cur)))
            cur, cur_len = [], 0

    for kind, t in sec["paras"]:
        if kind == "sub":
            sub = t
            if cur_len >= SUB_FLUSH:
                flush()
            if not cur or all(k == "sub" for k, _ in cur):
                cur_sub = sub
            cur.append((kind, t))
            cur_len += len(t) + 2
            continue
        for piece in split_long(t):
            if cur_len and cur_len + len(piece) > TARGET and not all(k == "sub" for k, _ in cur):
                flush()
                cur_sub = sub
            if not cur:
                cur_sub = sub
            cur.append((kind, piece))
            cur_len += len(piece) + 2
    flush()
    return out

records, seen_text, dup_passages = [], set(), 0
pkg_pages, pkg_passages = {}, {}
kept_pages = 0
for page, text in zip(pages, rendered):
    secs = sections_of(text)
    if sum(len(t) for s in secs for _, t in s["paras"]) < 100:
        continue
    kept_pages += 1
    pkg_pages[page["package"]] = pkg_pages.get(page["package"], 0) + 1
    used = set()
    label = f'{page["name"]}({page["section"]})'
    for s in secs:
        for sub, body in chunks_of(s):
            title = f"{label} / {s['heading']}" + (f" / {sub}" if sub else "")
            t, k = title, 2
            while t in used:
                t, k = f"{title} ({k})", k + 1
            used.add(t)
            if body in seen_text:          # boilerplate shared by many pages
                dup_passages += 1
                continue
            seen_text.add(body)
            records.append({"title": t, "text": body})
            pkg_passages[page["package"]] = pkg_passages.get(page["package"], 0) + 1

corpus = os.path.join(out_dir, "manpages-corpus.jsonl")
with open(corpus, "w", encoding="utf-8") as f:
    for i, r in enumerate(records):
        f.write(json.dumps({"doc_id": f"docs-{i}", "title": r["title"], "text": r["text"]},
                           ensure_ascii=False) + "\n")
sha = hashlib.sha256(open(corpus, "rb").read()).hexdigest()
size = os.path.getsize(corpus)

# ---- provenance --------------------------------------------------------------------------
def licences(pkg):
    d = None
    for root in (os.path.join(work, "root"), os.path.join(work, "extra")):
        cand = os.path.join(root, pkg, "usr", "share", "doc", pkg)
        if os.path.islink(cand):
            tgt = os.path.basename(os.readlink(cand))
            for r2 in (os.path.join(work, "root"), os.path.join(work, "extra")):
                c2 = os.path.join(r2, tgt, "usr", "share", "doc", tgt, "copyright")
                if os.path.isfile(c2):
                    d = c2
        elif os.path.isfile(os.path.join(cand, "copyright")):
            d = os.path.join(cand, "copyright")
        if d:
            break
    if not d:
        return "(no copyright file found)"
    txt = open(d, encoding="utf-8", errors="replace").read()
    via = "" if f"/doc/{pkg}/" in d else f" (copyright of `{d.split('/usr/share/doc/')[1].split('/')[0]}`)"
    names = sorted({m.strip() for m in re.findall(r"^License:[ \t]*(\S.*)$", txt, re.M)})
    if names:
        return "; ".join(names) + via
    found = []
    for pat, nm in [(r"GNU General Public License[^.]{0,80}?version 3", "GPL-3"),
                    (r"GNU General Public License[^.]{0,80}?version 2", "GPL-2"),
                    (r"GNU General Public License", "GPL"),
                    (r"Info-ZIP", "Info-ZIP"), (r"BSD", "BSD"),
                    (r"/usr/share/common-licenses/GPL-2", "GPL-2"),
                    (r"/usr/share/common-licenses/GPL-3", "GPL-3"),
                    (r"/usr/share/common-licenses/LGPL", "LGPL")]:
        if re.search(pat, txt, re.S) and nm not in found:
            found.append(nm)
    return "not machine-readable; mentions " + (", ".join(found) or "see file") + via

def suite_of(pkg, ver):
    try:
        r = subprocess.run(["apt-cache", "madison", pkg], capture_output=True, text=True)
    except OSError:
        return "?"
    for line in r.stdout.splitlines():
        parts = [x.strip() for x in line.split("|")]
        if len(parts) >= 3 and parts[1] == ver:
            return next((t for t in parts[2].split() if "/" in t and "://" not in t), parts[2])
    return "?"

def os_release():
    try:
        kv = dict(l.split("=", 1) for l in open("/etc/os-release").read().splitlines() if "=" in l)
        return kv.get("PRETTY_NAME", "?").strip('"')
    except OSError:
        return "?"

deb_ver = open("/etc/debian_version").read().strip() if os.path.exists("/etc/debian_version") else "?"
rows = []
for pkg in packages:
    deb = debs[pkg]
    ver = deb_field(deb, "Version")
    src = deb_field(deb, "Source") or pkg
    dsha = hashlib.sha256(open(deb, "rb").read()).hexdigest()
    rows.append((pkg, ver, src.split()[0], suite_of(pkg, ver), os.path.basename(deb), dsha,
                 pkg_pages.get(pkg, 0), pkg_passages.get(pkg, 0), licences(pkg)))

now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
with open(os.path.join(out_dir, "PROVENANCE.md"), "w", encoding="utf-8") as f:
    f.write("# Provenance of `manpages-corpus.jsonl`\n\n")
    f.write(f"Built {now} by `scripts/build-docs-corpus.sh` on {os_release()} "
            f"(/etc/debian_version {deb_ver}), from the Debian archive through `apt-get download` "
            f"(suites bookworm, bookworm-updates, bookworm-security, main).\n\n")
    f.write("| | |\n|---|---|\n")
    f.write(f"| corpus file | `manpages-corpus.jsonl` |\n")
    f.write(f"| sha256 | `{sha}` |\n")
    f.write(f"| size | {size:,} bytes |\n")
    f.write(f"| packages | {len(packages)} |\n")
    f.write(f"| man pages (sections 1, 5, 8; distinct sources) | {kept_pages} |\n")
    f.write(f"| passages | {len(records)} (another {dup_passages} dropped as exact duplicates of an earlier passage) |\n\n")
    f.write("Command: `scripts/build-docs-corpus.sh` (renders each page with "
            "`LC_ALL=C.UTF-8 MANWIDTH=10000 MANROFFOPT=-rHY=0 man -l PAGE.gz`, strips "
            "overstrikes, splits by section heading; see the script).\n\n")
    f.write("## Packages\n\n")
    f.write("| package | version | source package | suite | pages | passages | licences named in `/usr/share/doc/PKG/copyright` |\n")
    f.write("|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[6]} | {r[7]} | {r[8]} |\n")
    f.write("\n## .deb checksums (sha256)\n\n")
    for r in rows:
        f.write(f"- `{r[4]}` `{r[5]}`\n")
print(f"pages {kept_pages}, passages {len(records)} (+{dup_passages} duplicates dropped), "
      f"{size:,} bytes, sha256 {sha}", file=sys.stderr)
PY
