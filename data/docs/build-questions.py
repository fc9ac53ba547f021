#!/usr/bin/env python3
"""Builds manpages-dev.jsonl from the hand-written questions below and manpages-corpus.jsonl.

Every answerable question names its supporting passages by corpus title together with a regular
expression that must match in that passage (the evidence the answer was read from); the script
stops if one does not. `also` lists further patterns (optionally with a title prefix) for the same
fact worded elsewhere; any passage outside the supporting ones that matches an `also` pattern, or
an evidence pattern on the same man page, is never used as a distractor and is listed in
`also_supporting_titles` instead. Distractors are the passages most
similar to the question (BM25 over title + text), at most two per page. For unanswerable
questions `absent` patterns must match nowhere in the corpus.

    python3 data/docs/build-questions.py            (run from the repository root)
"""
import json
import math
import os
import random
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "manpages-corpus.jsonl")
OUT = os.path.join(HERE, "manpages-dev.jsonl")

# Ids carry a suffix on purpose: the split rule below (FNV-1a 64, bits 32-33) sends every id of the
# plain form "docs-q001" ... "docs-q060" to "final", because ids that differ only in their last
# characters differ only in the low bits after FNV-1a's last multiply. With "-manpages" after the
# number the 60 ids fall 20 tune / 19 report / 21 final, every type present in every split.
ID_FORMAT = "docs-q{:03d}-manpages"

S = "single_fact"
C = "chain"
K = "comparison"
Y = "yes_no"
N = "yes_no_negated"
H = "choice_neither"
U = "unanswerable"

# (type, question, answers, [(title, evidence regex)], extra: dict(also=[...], absent=[...], hint=str))
QUESTIONS = [
    # ---- single_fact ----------------------------------------------------------------------
    (S, "What's the highest compression level zstd will go to once I pass --ultra?", ["22"],
     [("zstd(1) / OPTIONS / Operation Modifiers", r"--ultra: unlocks high compression levels 20\+ \(maximum 22\)")],
     {"also": [(r"--ultra\s+: enable levels beyond 19, up to 22", "pzstd("), (r"For zstd from 0-22, with levels from 20 to 22 enabling its ultra mode", "dpkg-deb(")]}),
    (S, "If LoginGraceTime isn't set, how long does sshd give a client to finish logging in before it disconnects?",
     ["120 seconds", "120", "2 minutes"],
     [("sshd_config(5) / DESCRIPTION (23)", r"LoginGraceTime\s+The server disconnects after this time[^\n]*The default is 120 seconds")],
     {"also": [(r"-g login_grace_time\s+Gives the grace time for clients to authenticate themselves \(default 120 seconds\)", "sshd(8)")]}),
    (S, "When I run split on a file without saying how big the pieces should be, how many lines end up in each piece?",
     ["1000 lines", "1000"],
     [("split(1) / DESCRIPTION", r"default size is 1000 lines")],
     {"hint": "split csplit output pieces lines bytes chunks"}),
    (S, "Roughly how many loose objects have to pile up before git gc --auto decides to pack them?", ["6700"],
     [("git-gc(1) / CONFIGURATION", r"gc\.auto\s+When there are approximately more than this many loose objects[^\n]*The default value is 6700")],
     {"also": [r"The default value is 6700"]}),
    (S, "How long does ping wait between echo requests if I don't give it -i?", ["one second", "1 second", "1 s"],
     [("ping(8) / OPTIONS (2)", r"The default is to wait for one second between each packet")],
     {"hint": "ping ICMP ECHO_REQUEST packets interval count"}),
    (S, "In a crontab, what day does a 7 in the day-of-week field mean?", ["Sunday"],
     [("crontab(5) / EXTENSIONS", r"both day 0 and day 7 will be considered Sunday")],
     {}),
    (S, "By default, how many shell, login or sftp sessions will sshd allow over one network connection?", ["10"],
     [("sshd_config(5) / DESCRIPTION (28)", r"MaxSessions\s+Specifies the maximum number of open shell[^\n]*The default is 10\.")],
     {}),
    (S, "Which directory does apt-get clean empty out?",
     ["/var/cache/apt/archives/", "/var/cache/apt/archives", "/var/cache/apt/archives/ and /var/cache/apt/archives/partial/"],
     [("apt-get(8) / DESCRIPTION (7)", r"clean clears out the local repository of retrieved package files\. It removes everything but the lock file from /var/cache/apt/archives/ and /var/cache/apt/archives/partial/")],
     {"hint": "apt apt-get autoclean cache archives packages",
      "also": [(r"/var/cache/apt/archives/\nStorage area for retrieved package files", "apt")]}),
    (S, "What's the most a single systemd journal file is allowed to grow to under journald's default size settings?",
     ["128M", "128 MiB", "128 MB"],
     [("journald.conf(5) / OPTIONS (7)", r"Defaults to one eighth of the values configured with SystemMaxUse= and RuntimeMaxUse= capped to 128M")],
     {}),
    (S, "Where does less put tab stops if I never touch the -x option?", ["every 8 columns", "multiples of 8", "8"],
     [("less(1) / OPTIONS (17)", r"tab stops are set at multiples of n[\s\S]*The default for n is 8")],
     {}),
    (S, "How many days does git rerere gc keep the records of conflicts I already resolved?", ["60 days", "60"],
     [("git-gc(1) / CONFIGURATION (5)", r"gc\.rerereResolved\s+Records of conflicted merge you resolved earlier[^\n]*The default is 60 days")],
     {"also": [(r"resolved conflicts older than 60 days are pruned", "git-rerere("), r"resolved earlier are kept[^\n]*The default is 60 days"]}),
    (S, "After I press Escape, how long does tmux wait to decide whether it's the start of a key sequence?",
     ["500 milliseconds", "500 ms", "500"],
     [("tmux(1) / OPTIONS (4)", r"escape-time time\s+Set the time in milliseconds[^\n]*The default is 500 milliseconds")],
     {}),
    (S, "What inode size does mke2fs use for most file systems with the mke2fs.conf that ships with e2fsprogs?",
     ["256 bytes", "256"],
     [("mke2fs(8) / OPTIONS (8)", r"the default inode size is 256 bytes for most file systems")],
     {"also": [(r"inode_size = 256", "mke2fs.conf(")]}),
    (S, "Which port does rsync-ssl connect to unless I override it?", ["874"],
     [("rsync-ssl(1) / DESCRIPTION", r"The default port used for connecting is 874")],
     {}),
    (S, "Which files does sshd look in for a user's public keys when AuthorizedKeysFile is left at its default?",
     [".ssh/authorized_keys and .ssh/authorized_keys2", ".ssh/authorized_keys .ssh/authorized_keys2",
      "~/.ssh/authorized_keys and ~/.ssh/authorized_keys2"],
     [("sshd_config(5) / DESCRIPTION (7)", r'The default is "\.ssh/authorized_keys \.ssh/authorized_keys2"')],
     {"also": [(r"the default is ~/\.ssh/authorized_keys and ~/\.ssh/authorized_keys2", "sshd(8)")]}),

    # ---- chain ------------------------------------------------------------------------------
    (C, "My service unit doesn't set TimeoutStartSec=. With the stock manager configuration, how long will systemd wait for it to finish starting?",
     ["90s", "90 seconds", "90"],
     [("systemd.service(5) / OPTIONS (26)", r"TimeoutStartSec=[\s\S]*Defaults to DefaultTimeoutStartSec= from the manager configuration file"),
      ("systemd-system.conf(5) / OPTIONS (10)", r"DefaultTimeoutStartSec= and DefaultTimeoutStopSec= default to 90s")],
     {}),
    (C, "If neither the unit file nor the manager config sets StartLimitBurst=, how many starts within the rate-limit interval does systemd allow before refusing?",
     ["5"],
     [("systemd.unit(5) / [UNIT] SECTION OPTIONS (18)", r"burst is a number and defaults to DefaultStartLimitBurst= in manager configuration file"),
      ("systemd-system.conf(5) / OPTIONS (10)", r"DefaultStartLimitBurst= defaults to 5")],
     {}),
    (C, "git status borrows another setting when status.renameLimit isn't configured. How many files does it then consider for rename detection by default?",
     ["1000"],
     [("git-config(1) / CONFIGURATION FILE / Variables (145)", r"status\.renameLimit\s+The number of files to consider when performing rename detection in git-status\(1\) and git-commit\(1\)\. Defaults to the value of diff\.renameLimit"),
      ("git-diff(1) / CONFIGURATION (5)", r"diff\.renameLimit\s+The number of files to consider[^\n]*If not set, the default value is currently 1000")],
     {}),
    (C, "When LESS isn't set in my environment, Git sets it for me. What is the long option name of the first flag in that value?",
     ["--quit-if-one-screen"],
     [("git-config(1) / CONFIGURATION FILE / Variables (23)", r"When the LESS environment variable is unset, Git sets it to FRX"),
      ("less(1) / OPTIONS (7)", r"-F or --quit-if-one-screen\s+Causes less to automatically exit if the entire file can be displayed on the first screen")],
     {}),
    (C, "If I rsync to host:/path without -e or RSYNC_RSH, which TCP port does the connection go to, assuming my ssh config doesn't change it?",
     ["22"],
     [("rsync(1) / SETUP", r"For remote transfers, rsync normally uses ssh for its communications"),
      ("ssh_config(5) / DESCRIPTION (31)", r"Port\s+Specifies the port number to connect on the remote host\.  The default is 22\.")],
     {}),
    (C, "git commit --patch points me to another manual for how hunk selection works. Which key in that interface leaves the current hunk out?",
     ["n"],
     [("git-commit(1) / OPTIONS", r"-p, --patch\s+Use the interactive patch selection interface[^\n]*See git-add\(1\) for details"),
      ("git-add(1) / INTERACTIVE MODE (3)", r"n - do not stage this hunk")],
     {}),
    (C, "netstat's manual names a replacement tool for it. Which flag makes that tool list only listening sockets?",
     ["-l", "--listening", "-l (--listening)"],
     [("netstat(8) / NOTES", r"Replacement for netstat is ss\."),
      ("ss(8) / OPTIONS", r"-l, --listening\s+Display only listening sockets")],
     {}),
    (C, "If I build a .deb with dpkg-deb's default compressor at its default level, what LZMA2 dictionary size does that preset use according to the xz manual?",
     ["8 MiB", "8 MB"],
     [("dpkg-deb(1) / OPTIONS", r"default is 9 for gzip, 6 for xz, 3 for zstd[\s\S]*\(default is xz\)"),
      ("xz(1) / OPTIONS / Basic file format and compression options (4)", r"\n-6    8 MiB    6    94 MiB    9 MiB\n")],
     {}),

    # ---- comparison -------------------------------------------------------------------------
    (K, "Which tool uses a higher compression level when you don't specify one: gzip or zstd?", ["gzip"],
     [("gzip(1) / OPTIONS (4)", r"The default compression level is -6"),
      ("zstd(1) / OPTIONS / Operation Modifiers", r"-#: selects # compression level \[1-19\] \(default: 3\)")],
     {"also": [(r"default compression level \(-6\)", "gzip(")]}),
    (K, "Out of the box, which one retries a failed download more times, wget or curl?", ["wget"],
     [("wget(1) / OPTIONS / Download Options", r"The default is to retry 20 times"),
      ("curl(1) / OPTIONS (97)", r"Setting the number to 0 makes curl do no retries \(which is the default\)")],
     {}),
    (K, "Which follows more HTTP redirects before giving up by default, curl with -L or wget?", ["curl"],
     [("curl(1) / OPTIONS (59)", r"by default, the limit is set to 50 redirects"),
      ("wget(1) / OPTIONS / HTTP Options (7)", r"--max-redirect=number\s+Specifies the maximum number of redirections to follow for a resource\.  The default is 20")],
     {}),
    (K, "Between gc.reflogExpire and gc.reflogExpireUnreachable, which one keeps reflog entries around longer by default?",
     ["gc.reflogExpire"],
     [("git-gc(1) / CONFIGURATION (4)", r"gc\.reflogExpire, gc\.<pattern>\.reflogExpire\s+git reflog expire removes reflog entries older than this time; defaults to 90 days[\s\S]*gc\.reflogExpireUnreachable[^\n]*\n[^\n]*defaults to 30 days")],
     {"also": [(r"gc\.reflogExpire, which in turn defaults to 90 days", "git-reflog("), (r"gc\.reflogExpireUnreachable, which in turn defaults to 30 days", "git-reflog("), r"reflog entries older than this time; defaults to 90 days", r"not reachable from the current tip; defaults to 30 days"]}),
    (K, "Which keeps more lines by default: a tmux window's scrollback history or bash's command history list?",
     ["tmux", "a tmux window's scrollback history"],
     [("tmux(1) / BUFFERS", r"By default, up to 2000 lines are kept"),
      ("bash(1) / HISTORY", r"The text of the last HISTSIZE commands \(default 500\) is saved")],
     {}),
    (K, "Which listens on the higher-numbered port by default, the rsync daemon or sshd?", ["the rsync daemon", "rsync", "rsyncd"],
     [("rsyncd.conf(5) / GLOBAL PARAMETERS", r"You can override the default port the daemon will listen on by specifying this value \(defaults to 873\)"),
      ("sshd_config(5) / DESCRIPTION (31)", r"Port\s+Specifies the port number that sshd\(8\) listens on\.  The default is 22\.")],
     {"also": [r"\b873\b"]}),
    (K, "In dig, which query option has the bigger default value, +tries or +retry?", ["+tries"],
     [("dig(1) / QUERY OPTIONS (12)", r"\+tries=T\s+This option sets the number of times to try UDP and TCP queries to server to T instead of the default, 3"),
      ("dig(1) / QUERY OPTIONS (9)", r"\+retry=T\s+This option sets the number of times to retry UDP and TCP queries to server to T instead of the default, 2")],
     {}),
    (K, "For the ssh client, which setting defaults to the higher number: NumberOfPasswordPrompts or ConnectionAttempts?",
     ["NumberOfPasswordPrompts"],
     [("ssh_config(5) / DESCRIPTION (30)", r"NumberOfPasswordPrompts\s+Specifies the number of password prompts before giving up\.[^\n]*The default is 3"),
      ("ssh_config(5) / DESCRIPTION (10)", r"ConnectionAttempts\s+Specifies the number of tries \(one per second\) to make before exiting\.[^\n]*The default is 1\.")],
     {}),

    # ---- yes_no -----------------------------------------------------------------------------
    (Y, "Does zstd leave the original file in place after compressing it, unless I tell it otherwise?", ["yes"],
     [("zstd(1) / DESCRIPTION", r"Source files are preserved by default")],
     {}),
    (Y, "With sshd's default PermitRootLogin, can root log in over SSH with a password?", ["no"],
     [("sshd_config(5) / DESCRIPTION (30)", r"The default is prohibit-password\.[\s\S]*If this option is set to prohibit-password \(or its deprecated alias, without-password\), password and keyboard-interactive authentication are disabled for root")],
     {}),
    (Y, "If I run journalctl with no arguments, does it show the newest entries first?", ["no"],
     [("journalctl(1) / DESCRIPTION", r"If called without parameters, it will show the full contents of the journal, starting with the oldest entry collected")],
     {}),
    (Y, "Can I write day names like 'mon' in the day-of-week field of a crontab?", ["yes"],
     [("crontab(5) / DESCRIPTION (3)", r"Names can also be used for the ``month'' and ``day of week'' fields\.  Use the first three letters")],
     {}),
    (Y, "Do timeout and kill send the same signal when you don't name one?", ["yes"],
     [("timeout(1) / DESCRIPTION", r"Upon timeout, send the TERM signal to COMMAND, if no other SIGNAL specified"),
      ("kill(1) / DESCRIPTION", r"The default signal for kill is TERM")],
     {"also": [(r"Send the default signal, SIGTERM", "kill(1)")]}),
    (Y, "Is compression switched on by default for ssh client connections?", ["no"],
     [("ssh_config(5) / DESCRIPTION (10)", r"Compression\s+Specifies whether to use compression\.  The argument must be yes or no \(the default\)")],
     {}),

    # ---- yes_no_negated ---------------------------------------------------------------------
    (N, "Does find follow symbolic links by default?", ["no"],
     [("find(1) / OPTIONS (2)", r"-P\s+Never follow symbolic links\.  This is the default behaviour")],
     {}),
    (N, "Is it right that plain rm, with no options, won't delete directories?", ["yes"],
     [("rm(1) / DESCRIPTION", r"By default, it does not remove directories")],
     {"also": [r"By default, rm does not remove directories"]}),
    (N, "Will rsync -a preserve hard links on its own?", ["no"],
     [("rsync(1) / OPTIONS (9)", r"it does not include preserving ACLs \(-A\), xattrs \(-X\), atimes \(-U\), crtimes \(-N\), nor the finding and preserving of hardlinks \(-H\)")],
     {"also": [(r"archive mode is -rlptgoD \(no -A,-X,-U,-N,-H\)", "rsync(")]}),
    (N, "Is it true that a .zst file doesn't keep the original file's name or attributes?", ["yes"],
     [("zstd(1) / DESCRIPTION", r"zstd does not store the input.s filename or attributes, only its contents")],
     {}),
    (N, "Can sshd's client alive messages be spoofed the way TCP keepalives can?", ["no"],
     [("sshd_config(5) / DESCRIPTION (13)", r"The client alive messages are sent through the encrypted channel and therefore will not be spoofable")],
     {}),
    (N, "If I raise history-limit while tmux is running, do the windows that already exist keep their old limit?", ["yes"],
     [("tmux(1) / OPTIONS (9)", r"history-limit lines\s+Set the maximum number of lines held in window history\.  This setting applies only to new windows - existing window histories are not resized and retain the limit at the point they were created")],
     {}),

    # ---- choice_neither ---------------------------------------------------------------------
    (H, "Does ssh-keygen make 2048-bit or 4096-bit RSA keys when I don't pass -b?", ["3072 bits", "3072"],
     [("ssh-keygen(1) / DESCRIPTION (4)", r"For RSA keys, the minimum size is 1024 bits and the default is 3072 bits")],
     {}),
    (H, "How long does sudo remember that I typed my password: 5 minutes or 30 minutes?", ["15 minutes", "15"],
     [("sudoers(5) / SUDOERS OPTIONS (33)", r"timestamp_timeout\s+Number of minutes that can elapse before sudo will ask for a password again\.[^\n]*The default is 15")],
     {"also": [r"15 minutes unless overridden by the timestamp_timeout", r"timestamp_timeout minutes \(15 by default\)"]}),
    (H, "What level does xz compress at when I don't give one, -9 or -3?", ["-6", "6"],
     [("xz(1) / OPTIONS / Basic file format and compression options (3)", r"Select a compression preset level\.  The default is -6")],
     {"also": [r"-6 is the default", r"in XZ Utils it is -6", (r"default compression level \(-6\)", "xz("), r"default values of LZMA1 or LZMA2 options are taken from the preset 6"]}),
    (H, "Does dig give up on a query after 2 seconds or after 10?", ["5 seconds", "5"],
     [("dig(1) / QUERY OPTIONS (11)", r"\+timeout=T\s+This option sets the timeout for a query to T seconds\. The default timeout is 5 seconds")],
     {}),
    (H, "Does watch rerun the command every second or every 5 seconds by default?", ["every 2 seconds", "2 seconds", "2"],
     [("watch(1) / DESCRIPTION", r"By default, command is run every 2 seconds")],
     {}),
    (H, "How many packs does it take before git gc --auto merges them into one: more than 10 or more than 100?",
     ["more than 50", "50"],
     [("git-gc(1) / CONFIGURATION", r"gc\.autoPackLimit\s+When there are more than this many packs[^\n]*The default value is 50")],
     {"also": [r"this many packs that are not marked with \*\.keep file in the repository, git gc --auto consolidates them into one larger pack\. The default value is 50"]}),
    (H, "If I run journalctl -n without a number, does it show the last 20 entries or the last 50?", ["10", "the last 10 entries"],
     [("journalctl(1) / OUTPUT OPTIONS (3)", r"-n, --lines=\s+Show the most recent journal events[^\n]*The default value is 10 if no argument is given")],
     {}),

    # ---- unanswerable -----------------------------------------------------------------------
    (U, "Which zstd release was the first to ship the --patch-from option?", [], [],
     {"absent": [r"patch-from[^\n]*(since|introduced|added in|v?1\.[0-9]+\.[0-9]+)", r"(since|introduced|added in)[^\n]*patch-from"],
      "hint": "zstd patch-from diff engine reference"}),
    (U, "What's the largest single file GNU tar can store in an archive using its default format?", [], [],
     {"absent": [(r"(?i)(maximum|largest|max)[^\n]{0,40}(file|member) size", "tar("), (r"(?i)8 ?GiB", "tar("), (r"(?i)8 ?gigabytes", "tar(")],
      "hint": "tar archive format file size"}),
    (U, "What year did rsync first come out?", [], [],
     {"absent": [r"(?i)rsync[^\n]{0,60}first released", (r"(?i)(released|written|created)[^\n]{0,40}19(9[0-9])", "rsync"), (r"\b199[0-9]\b", "rsync")],
      "hint": "rsync history"}),
    (U, "Which TCP port does systemd-journal-remote listen on by default?", [], [],
     {"absent": [r"19532", r"(?i)journal-remote[^\n]{0,120}port"], "hint": "journal remote upload journald journalctl export listen port"}),
    (U, "About how long does git gc --aggressive take on a 2 GB repository?", [], [],
     {"absent": [r"(?i)aggressive[^\n]{0,200}(minutes|hours)"], "hint": "git gc aggressive time repository"}),
    (U, "How many times does APT retry a failed download if I leave Acquire::Retries alone?", [], [],
     {"absent": [r"Retries[^\n]{0,200}(default|Defaults)"], "hint": "apt acquire retries download"}),
    (U, "What's the maximum number of rules a single nftables chain can hold?", [], [],
     {"absent": [r"(?i)(maximum|max) number of rules", r"(?i)rules per chain"], "hint": "nftables chain rules nft"}),
    (U, "How big a journal does mke2fs create by default for a 1 TB ext4 file system?", [], [],
     {"absent": [r"(?i)journal[^\n]{0,80}(1 ?TB|1 ?TiB|terabyte)", r"(?i)default journal size is"], "hint": "mke2fs ext4 journal size default"}),
    (U, "Which Debian release was the first to use systemd as its default init system?", [], [],
     {"absent": [r"(?i)\b(jessie|wheezy)\b", r"(?i)debian (7|8)\b", r"(?i)default init system", r"(?i)systemd[^\n]{0,80}(became|made) the default"], "hint": "systemd init system default debian"}),
    (U, "How much memory does GNU sort use for its main buffer when -S isn't given?", [], [],
     {"absent": [r"(?i)buffer-size[^\n]{0,200}default", (r"(?i)default buffer size", "sort("), (r"(?i)buffer[^\n]{0,80}default", "sort(")], "hint": "sort buffer size memory"}),
]


def fnv1a64(s):
    x = 0xCBF29CE484222325
    for b in s.encode():
        x ^= b
        x = (x * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return x


def split_of(i):
    x = fnv1a64(i)
    if (x >> 32) % 4 == 0:
        return "final"
    return "tune" if x % 2 == 0 else "report"


STOP = set("""a an the of to in on for and or is it its be by with as at from that this which what
when how does do did i my me we you your if not no yes than then there their into out over
under about can will would should one use used uses using default defaults by get gets""".split())


def toks(s):
    return [t for t in re.findall(r"[a-z0-9][a-z0-9_.+=-]*", s.lower()) if t not in STOP and len(t) > 1]


def main():
    recs = [json.loads(l) for l in open(CORPUS, encoding="utf-8")]
    by_title = {r["title"]: r for r in recs}
    assert len(by_title) == len(recs), "corpus titles must be unique"
    docs = [Counter(toks(r["title"] + " " + r["text"])) for r in recs]
    lens = [sum(d.values()) for d in docs]
    avg = sum(lens) / len(lens)
    df = Counter()
    for d in docs:
        df.update(d.keys())
    n = len(docs)

    def bm25(query):
        q = toks(query)
        scores = []
        for i, d in enumerate(docs):
            s = 0.0
            for t in q:
                if t in d:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    tf = d[t]
                    s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lens[i] / avg))
            scores.append(s)
        return sorted(range(n), key=lambda i: -scores[i])

    out, errors = [], []
    for k, (typ, question, answers, support, extra) in enumerate(QUESTIONS, 1):
        qid = ID_FORMAT.format(k)
        sup_titles = []
        for title, pat in support:
            r = by_title.get(title)
            if r is None:
                errors.append(f"{qid}: no passage titled {title!r}")
                continue
            if not re.search(pat, r["text"]):
                errors.append(f"{qid}: evidence /{pat}/ not in {title!r}")
            sup_titles.append(title)
        for pat in extra.get("absent", []):
            pat, prefix = pat if isinstance(pat, tuple) else (pat, "")
            hits = [r["title"] for r in recs if r["title"].startswith(prefix) and re.search(pat, r["text"])]
            if hits:
                errors.append(f"{qid}: unanswerable but /{pat}/ matches {hits[:3]}")
        answer_pats = [(p, t.split(" / ")[0] + " / ") for t, p in support]
        answer_pats += [p if isinstance(p, tuple) else (p, "") for p in extra.get("also", [])]
        also = [r["title"] for r in recs
                if r["title"] not in sup_titles
                and any(r["title"].startswith(pre) and re.search(p, r["text"]) for p, pre in answer_pats)]
        want = 5 if typ == U else 4
        dis, per_page = [], Counter()
        for i in bm25(question + " " + extra.get("hint", "")):
            r = recs[i]
            page = r["title"].split(" / ")[0]
            if r["title"] in sup_titles or r["title"] in also or len(r["text"]) < 150:
                continue
            if per_page[page] >= 2:
                continue
            dis.append(r)
            per_page[page] += 1
            if len(dis) == want:
                break
        contexts = [{"title": t, "text": by_title[t]["text"], "is_supporting": True} for t in sup_titles]
        contexts += [{"title": r["title"], "text": r["text"], "is_supporting": False} for r in dis]
        random.Random(qid).shuffle(contexts)
        rec = {"id": qid, "dataset": "manpages", "question": question, "answers": answers, "type": typ,
               "supporting_titles": sup_titles, "contexts": contexts}
        if also:
            rec["also_supporting_titles"] = also
        if typ == U:
            rec["unanswerable"] = True
        rec["split"] = split_of(qid)
        out.append(rec)
    if errors:
        sys.exit("\n".join(errors))
    with open(OUT, "w", encoding="utf-8") as f:
        for rec in out:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"{len(out)} questions -> {OUT}")
    print("types:", dict(Counter(r["type"] for r in out)))
    print("splits:", dict(Counter(r["split"] for r in out)))


if __name__ == "__main__":
    main()
