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
# plain form "docs-q001" ... "docs-q200" to "final", because ids that differ only in their last
# characters differ only in the low bits after FNV-1a's last multiply. With "-manpages" after the
# number the 200 ids fall 69 tune / 70 report / 61 final, every type present in every split. The
# id is the position in QUESTIONS: append new questions at the end so existing ids do not change.
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

    # ---- single_fact (q061-q085) ------------------------------------------------------------
    (S, "How long does git's credential cache helper hang on to my password if I don't pass --timeout?",
     ["900 seconds", "900", "15 minutes"],
     [("git-credential-cache(1) / OPTIONS", r"--timeout <seconds>\nNumber of seconds to cache credentials \(default: 900\)")],
     {}),
    (S, "Which TCP port does git daemon listen on unless I tell it otherwise?", ["9418"],
     [("git-daemon(1) / DESCRIPTION", r'normally listens on port "DEFAULT_GIT_PORT" aka 9418')],
     {"also": [(r"\b9418\b", "git")]}),
    (S, "I ran wget -r on a site without -l. How many directory levels down will it go?", ["5", "5 levels", "five"],
     [("wget(1) / OPTIONS / Recursive Retrieval Options", r"this is limited to a depth of 5 by default")],
     {}),
    (S, "How many requests can sftp have outstanding at the same time if I leave -R alone?", ["64", "64 outstanding requests"],
     [("sftp(1) / DESCRIPTION (4)", r"-R num_requests\nSpecify how many requests may be outstanding at any one time\.[^\n]*The default is 64 outstanding requests")],
     {"also": [r"By default 64 requests may be active concurrently"]}),
    (S, "When a terminal is slow, how long does wall keep trying to write to it before it gives up?",
     ["300 seconds", "300", "5 minutes"],
     [("wall(1) / OPTIONS", r"Abandon the write attempt to the terminals after timeout seconds\.[^\n]*The default value is 300 seconds")],
     {}),
    (S, "sudo_logsrvd's listen_address has no port on it. Which port does it take for plaintext connections?", ["30343"],
     [("sudo_logsrvd.conf(5) / DESCRIPTION / server", r"If no port is specified, port 30343 will be used for plaintext connections and port 30344 will be used for TLS connections")],
     {"also": [r"port 30343 will be used for plaintext", r"listen_address = \*:30343"]}),
    (S, "By default, how much of each packet does tcpdump grab?", ["262144 bytes", "262144", "256 KiB"],
     [("tcpdump(8) / OPTIONS (10)", r"Snarf snaplen bytes of data from each packet rather than the default of 262144 bytes")],
     {}),
    (S, "How long will systemd-networkd-wait-online wait for the network to come up before the service fails?",
     ["120 seconds", "120", "2 minutes"],
     [("systemd-networkd-wait-online.service(8) / OPTIONS (3)", r"--timeout=SECS\nFail the service if the network is not online by the time the timeout elapses\. A timeout of 0 disables the timeout\. Defaults to 120 seconds")],
     {}),
    (S, "With Compress= left at its default, how big does a data object have to be before journald compresses it?",
     ["512 bytes", "512", "larger than 512 bytes"],
     [("journald.conf(5) / OPTIONS (2)", r"If enabled \(the default\), data objects that shall be stored in the journal and are larger than the default threshold of 512 bytes are compressed")],
     {}),
    (S, "What's the longest name a systemd unit can have, counting the suffix?", ["255 characters", "255"],
     [("systemd.unit(5) / DESCRIPTION (2)", r"length of the unit name including the suffix must not exceed 255 characters")],
     {}),
    (S, "iptables-apply rolls back if I don't confirm the new rules in time. How many seconds do I get by default?",
     ["10 seconds", "10"],
     [("iptables-apply(8) / OPTIONS", r"timeout in seconds after which the script will roll back to the previous ruleset \(default: 10\)")],
     {}),
    (S, "What's the maximum length of a hostname I set with hostnamectl?", ["64 characters", "64"],
     [("hostnamectl(1) / COMMANDS", r"The hostname must be at most 64 characters, which is a Linux limitation")],
     {"also": [(r"must be at most 64 characters, which is a Linux limit", "os-release("), (r"64 characters at maximum \(the latter being a Linux limitation\)", "hostnamectl(")]}),
    (S, "How many characters can a swap partition's label have?", ["16 characters", "16"],
     [("swaplabel(8) / OPTIONS", r"Swap partition labels can be at most 16 characters long")],
     {}),
    (S, "Without any target release or preferences file, which pin priority does APT give a package version that isn't installed yet?",
     ["500"],
     [("apt_preferences(5) / DESCRIPTION / APT's Default Priority Assignments (2)", r"If the target release has not been specified then APT simply assigns priority 100 to all installed package versions and priority 500 to all uninstalled package versions")],
     {}),
    (S, "How long does an idle connection sit before curl starts sending TCP keepalive probes, if --keepalive-time isn't given?",
     ["60 seconds", "60"],
     [("curl(1) / OPTIONS (51)", r"keepalive probes[\s\S]*If unspecified, the option defaults to 60 seconds")],
     {}),
    (S, "How many errors will dpkg put up with before it aborts, unless I change it?", ["50"],
     [("dpkg(1) / OPTIONS", r"--abort-after=number\nChange after how many errors dpkg will abort\. +The default is 50\.")],
     {}),
    (S, "I created an nftables base chain without giving it a policy. What happens to packets that fall off the end of it?",
     ["accept", "they are accepted", "accepted"],
     [("nft(8) / CHAINS (5)", r"Supported policy values are accept \(which is the default\) or drop")],
     {}),
    (S, "How many bcrypt_pbkdf rounds does ssh-keygen use when it saves a passphrase-protected key, unless I set -a?", ["16", "16 rounds"],
     [("ssh-keygen(1) / DESCRIPTION (3)", r"-a rounds\nWhen saving a private key, this option specifies the number of KDF[^\n]*The default is 16 rounds")],
     {}),
    (S, "On a machine with 4 KiB pages, what node size does mkfs.btrfs use if I don't pass --nodesize?",
     ["16KiB", "16384", "16 KiB", "16384 bytes"],
     [("mkfs.btrfs(8) / OPTIONS (3)", r"The default value is 16KiB \(16384\) or the page size, whichever is bigger")],
     {"also": [(r"The default value is 16KiB \(16384\) or the page size", "btrfs-convert(")]}),
    (S, "What working precision, in bits, does gawk use for arbitrary-precision math when PREC isn't set?", ["53", "53 bits"],
     [("gawk(1) / VARIABLES, RECORDS AND FIELDS / Built-in Variables (2)", r"PREC    The working precision of arbitrary precision floating-point numbers, 53 by default")],
     {}),
    (S, "With GREP_COLORS unset, what SGR code does grep use to highlight matched text?", ["01;31", "ms=01;31", "bold red"],
     [("grep(1) / ENVIRONMENT", r"defaults to ms=01;31:mc=01;31:sl=:cx=:fn=35:ln=32:bn=32:se=36")],
     {"also": [(r"SGR substring for matching non-empty text in (any matching|a selected) line[^\n]*The default is a bold red text foreground", "grep(")]}),
    (S, "When I tag an address with a label via ip address add, how long may the label be?", ["15 characters", "15"],
     [("ip-address(8) / DESCRIPTION / ip address add - add new protocol address.", r"The maximum allowed total length of label is 15 characters")],
     {"also": [(r"Label=\nSpecifies the label for the IPv4 address\. The label must be a 7-bit ASCII string with a length of 1\.\.\.15 characters", "systemd.network(")]}),
    (S, "What share of an ext4 file system's blocks does mke2fs hold back for root unless -m says otherwise?", ["5%", "5 percent", "5"],
     [("mke2fs(8) / OPTIONS (11)", r"-m reserved-blocks-percentage\nSpecify the percentage of the file system blocks reserved for the super-user\.[^\n]*The default percentage is 5%")],
     {}),
    (S, "How often does bash check for new mail if MAILCHECK isn't changed?", ["every 60 seconds", "60 seconds", "60"],
     [("bash(1) / PARAMETERS / Shell Variables (20)", r"MAILCHECK\nSpecifies how often \(in seconds\) bash checks for mail\.  The default is 60 seconds")],
     {}),
    (S, "What's the largest single memory allocation rsync allows itself by default?", ["about 1GB", "1GB", "1G", "1 GB"],
     [("rsync(1) / OPTIONS (58)", r"By default rsync limits an individual malloc/realloc to about 1GB in size")],
     {"also": [(r'"1G" is the default', "rsync(")]}),

    # ---- chain (q086-q099) ------------------------------------------------------------------
    (C, "My unit file doesn't set TasksMax=. With the stock manager configuration, what fraction of the system's task limit is the service allowed?",
     ["15%", "15 percent", "15% of the minimum of kernel.pid_max, kernel.threads-max and the root cgroup pids.max"],
     [("systemd.resource-control(5) / OPTIONS (9)", r"TasksMax=N[\s\S]*The system default for this setting may be controlled with DefaultTasksMax= in systemd-system\.conf\(5\)"),
      ("systemd-system.conf(5) / OPTIONS (12)", r"DefaultTasksMax=\nConfigure the default value for the per-unit TasksMax= setting\.[^\n]*Defaults to 15% of the minimum of kernel\.pid_max=, kernel\.threads-max= and root cgroup pids\.max")],
     {}),
    (C, "An fstab entry points at a disk that never shows up and has no x-systemd.device-timeout=. How long does systemd wait for it before giving up?",
     ["90s", "90 seconds", "90"],
     [("systemd.mount(5) / FSTAB (3)", r"x-systemd\.device-timeout=\nConfigure how long systemd should wait for a device to show up before giving up on an entry from /etc/fstab"),
      ("systemd-system.conf(5) / OPTIONS (10)", r"DefaultDeviceTimeoutSec=\nConfigures the default timeout for waiting for devices\. It can be changed per device via the x-systemd\.device-timeout= option[^\n]*Defaults to 90s")],
     {}),
    (C, "fsck -A decides the checking order from one of the columns in /etc/fstab. If an fstab line simply leaves that column off, what value is assumed?",
     ["0", "zero", "0 (the file system is not checked)"],
     [("fsck(8) / OPTIONS (3)", r"filesystems will be checked in the order specified by the fs_passno \(the sixth\) field in the /etc/fstab file"),
      ("fstab(5) / DESCRIPTION / The fifth field (fs_freq).", r"The sixth field \(fs_passno\)\.[\s\S]*Defaults to zero \(don.t check the filesystem\) if not present")],
     {}),
    (C, "tar -j hands the archive to another compressor. What block size does that compressor use when I don't give it a level?",
     ["900 k", "900k", "900 kB", "900,000 bytes"],
     [("tar(1) / OPTIONS / Compression options", r"-j, --bzip2\nFilter the archive through bzip2\(1\)"),
      ("bzip2(1) / OPTIONS (2)", r"Set the block size to 100 k, 200 k \.\.\.  900 k when compressing\.[\s\S]*--best merely selects the default behaviour")],
     {"also": [(r"default 900 k block size", "bzip2(")]}),
    (C, "git gc --aggressive widens the delta search window it hands to repack. How big is that window unless I've configured it?",
     ["250"],
     [("git-gc(1) / AGGRESSIVE", r"supplying --aggressive will tweak the --depth and --window options passed to git-repack\(1\)\. See the gc\.aggressiveDepth and gc\.aggressiveWindow settings below"),
      ("git-gc(1) / CONFIGURATION", r"gc\.aggressiveWindow\s+The window size parameter used in the delta compression algorithm used by git gc --aggressive\. This defaults to 250")],
     {"also": [r"This defaults to 250, which is a much more aggressive window size"]}),
    (C, "I have none of GIT_EDITOR, core.editor, VISUAL or EDITOR set. Which editor does git commit open on this Debian build?",
     ["editor", "/usr/bin/editor"],
     [("git-commit(1) / ENVIRONMENT AND CONFIGURATION VARIABLES", r"core\.editor configuration variable, the VISUAL environment variable, or the EDITOR environment variable \(in that order\)\. See git-var\(1\) for details"),
      ("git-var(1) / VARIABLES", r"and then the default chosen at compile time, which is usually vi\. The build you are using chose editor as the default")],
     {}),
    (C, "When I add an ordinary user with adduser and don't pass --shell, what login shell does the new account get?",
     ["/bin/bash", "bash"],
     [("adduser(8) / OPTIONS (4)", r"--shell shell\nUse shell as the user's login shell, rather than the default specified by the configuration file"),
      ("adduser.conf(5) / DESCRIPTION", r"DSHELL The login shell to be used for all new users\.  Defaults to /bin/bash")],
     {}),
    (C, "If none of my startup files set HISTFILESIZE, how many lines will bash keep in the history file?",
     ["500", "500 lines"],
     [("bash(1) / PARAMETERS / Shell Variables (17)", r"HISTFILESIZE\nThe maximum number of lines contained in the history file\.[^\n]*The shell sets the default value to the value of HISTSIZE after reading any startup files"),
      ("bash(1) / PARAMETERS / Shell Variables (18)", r"The number of commands to remember in the command history \(see HISTORY below\)\.[^\n]*The shell sets the default value to 500 after reading any startup files")],
     {"also": [(r"The text of the last HISTSIZE commands \(default 500\)", "bash(")]}),
    (C, "lvextend -r resizes the file system through a helper script. Which file system types does that helper support?",
     ["ext2, ext3, ext4, ReiserFS and XFS", "ext2/ext3/ext4, ReiserFS, XFS"],
     [("lvextend(8) / OPTIONS (5)", r"-r\|--resizefs\nResize underlying filesystem together with the LV using fsadm\(8\)"),
      ("fsadm(8) / DESCRIPTION", r"It tries to use the same API for ext2, ext3, ext4, ReiserFS and XFS filesystem")],
     {}),
    (C, "On Debian, if I set BatchMode yes in ssh_config and leave everything else alone, roughly how long will ssh hang on to a server that has stopped answering?",
     ["about 900 seconds", "900 seconds", "15 minutes", "900"],
     [("ssh_config(5) / DESCRIPTION (6)", r"BatchMode\nIf set to yes, user interaction such as password prompts and host key confirmation requests will be disabled\.  In addition, the ServerAliveInterval option will be set to 300 seconds by default \(Debian-specific\)"),
      ("ssh_config(5) / DESCRIPTION (39)", r"ServerAliveCountMax\nSets the number of server alive messages[\s\S]*The default value is 3\.  If, for example, ServerAliveInterval \(see below\) is set to 15 and ServerAliveCountMax is left at the default, if the server becomes unresponsive, ssh will disconnect after approximately 45 seconds")],
     {}),
    (C, "A service that keeps crashing hits the start rate limit. If neither the unit nor system.conf sets the interval, over what window does systemd count those starts?",
     ["10s", "10 seconds", "10"],
     [("systemd.unit(5) / [UNIT] SECTION OPTIONS (18)", r"interval is a time span[^\n]*Defaults to DefaultStartLimitIntervalSec= in manager configuration file"),
      ("systemd-system.conf(5) / OPTIONS (10)", r"DefaultStartLimitIntervalSec= defaults to 10s")],
     {}),
    (C, "apt-key's deprecation notice tells me to reference keyrings from a sources.list option instead. Which system user has to be able to read the keyring files I give that option?",
     ["_apt", "the _apt system user"],
     [("apt-key(8) / DEPRECATION", r"you can place them anywhere on your filesystem by using the Signed-By option in your sources\.list and pointing to the filename of the key"),
      ("sources.list(5) / THE DEB AND DEB-SRC TYPES: OPTIONS (5)", r"Signed-By \(signed-by\) is an option[^\n]*have to be accessible and readable for the _apt system user")],
     {}),
    (C, "If I add a route with ip route and don't give congctl, which TCP congestion control algorithm do connections over it end up using on a stock kernel?",
     ["cubic"],
     [("ip-route(8) / DESCRIPTION (6)", r"If not specified, Linux keeps the current global default TCP congestion control algorithm"),
      ("ss(8) / OPTIONS (3)", r"cong_alg\nthe congestion algorithm name, the default congestion algorithm is \"cubic\"")],
     {}),
    (C, "I deleted a linked worktree's directory by hand. With default settings, how old do its leftover administrative files have to be before git gc clears them out?",
     ["3 months", "three months", "3.months.ago"],
     [("git-worktree(1) / DESCRIPTION (2)", r"will eventually be removed automatically \(see gc\.worktreePruneExpire in git-config\(1\)\)"),
      ("git-gc(1) / CONFIGURATION (4)", r"gc\.worktreePruneExpire\nWhen git gc is run, it calls git worktree prune --expire 3\.months\.ago")],
     {"also": [r"it calls git worktree prune --expire 3\.months\.ago"]}),

    # ---- comparison (q100-q111) -------------------------------------------------------------
    (K, "Which file system lets me use a longer volume label, ext4 or XFS?", ["ext4"],
     [("e2label(8) / DESCRIPTION", r"Ext2 volume labels can be at most 16 characters long"),
      ("mkfs.xfs(8) / OPTIONS (22)", r"XFS filesystem labels can be at most 12 characters long")],
     {"also": [(r"labels can be at most 16 characters long", "tune2fs("), (r"The maximum length of the volume label is 16 bytes", "mke2fs("), r"XFS filesystem labels can be at most 12 characters long", r"maximum length of an XFS label is 12 characters"]}),
    (K, "Does useradd's default range for regular user IDs reach higher than the range adduser hands out?", ["yes"],
     [("useradd(8) / CONFIGURATION (3)", r"The default value for UID_MIN \(resp\.  UID_MAX\) is 1000 \(resp\. 60000\)"),
      ("adduser.conf(5) / DESCRIPTION (2)", r"FIRST_UID  and  LAST_UID\nspecify an inclusive range of UIDs from which UIDs for non-system users can be dynamically allocated\.  Defaults to 1000 - 59999")],
     {"also": [r"The default value for UID_MIN \(resp\.  UID_MAX\) is 1000 \(resp\. 60000\)"]}),
    (K, "Can an iptables rule comment be longer than a systemd unit name?", ["yes"],
     [("iptables-extensions(8) / MATCH EXTENSIONS / comment", r"Allows you to add comments \(up to 256 characters\) to any rule"),
      ("systemd.unit(5) / DESCRIPTION (2)", r"length of the unit name including the suffix must not exceed 255 characters")],
     {}),
    (K, "In rsync, which compression algorithm runs at the higher level when I don't set --compress-level: zlib or zstd?", ["zlib"],
     [("rsync(1) / OPTIONS (83)", r"For zlib & zlibx compression the valid values are from 1 to 9 with 6 being the default\.[\s\S]*For zstd compression the valid values are from -131072 to 22 with 3 being the default")],
     {}),
    (K, "Out of the box, who lets me get my password wrong more times before giving up: sshd on a single connection, or sudo?",
     ["sshd", "sshd (MaxAuthTries 6)"],
     [("sshd_config(5) / DESCRIPTION (27)", r"MaxAuthTries\nSpecifies the maximum number of authentication attempts permitted per connection\.[^\n]*The default is 6"),
      ("sudoers(5) / SUDOERS OPTIONS (31)", r"passwd_tries    The number of tries a user gets to enter his/her password before sudo logs the failure and exits\.  The default is 3")],
     {}),
    (K, "By default, does journald insist on leaving more of the file system free than it allows the journal itself to take?", ["yes"],
     [("journald.conf(5) / OPTIONS (6)", r"SystemMaxUse= and RuntimeMaxUse= control how much disk space the journal may use up at most\.  SystemKeepFree= and RuntimeKeepFree= control how much disk space systemd-journald shall leave free"),
      ("journald.conf(5) / OPTIONS (7)", r"The first pair defaults to 10% and the second to 15% of the size of the respective file system")],
     {}),
    (K, "Between fmt and fold, which one wraps at the wider column when I don't give a width?", ["fold"],
     [("fmt(1) / DESCRIPTION", r"-w, --width=WIDTH\nmaximum line width \(default of 75 columns\)"),
      ("fold(1) / DESCRIPTION", r"-w, --width=WIDTH\nuse WIDTH columns instead of 80")],
     {}),
    (K, "When dpkg-deb builds a package with gzip, does it compress harder than gzip does on its own by default?", ["yes"],
     [("dpkg-deb(1) / OPTIONS", r"default is 9 for gzip, 6 for xz, 3 for zstd"),
      ("gzip(1) / OPTIONS (4)", r"The default compression level is -6")],
     {"also": [(r"default compression level \(-6\)", "gzip(")]}),
    (K, "If I don't name a signal, do fuser -k and killall send the same one?", ["no"],
     [("fuser(1) / OPTIONS", r"-k, --kill\nKill processes accessing the file\.  Unless changed with -SIGNAL, SIGKILL is sent"),
      ("killall(1) / DESCRIPTION", r"If no signal name is specified, SIGTERM is sent")],
     {"also": [(r"Send this signal instead of SIGTERM", "killall(")]}),
    (K, "Which is bigger with the defaults: the block size mkfs.xfs picks or the metadata node size mkfs.btrfs picks (on 4 KiB pages)?",
     ["the btrfs node size", "mkfs.btrfs", "btrfs"],
     [("mkfs.xfs(8) / OPTIONS (2)", r"The filesystem block size is specified with a value in bytes\. The default value is 4096 bytes \(4 KiB\)"),
      ("mkfs.btrfs(8) / OPTIONS (3)", r"The default value is 16KiB \(16384\) or the page size, whichever is bigger")],
     {"also": [(r"The default value is 16KiB \(16384\) or the page size", "btrfs-convert(")]}),
    (K, "Once I set a target release, do versions from the backports archive get a higher pin priority than versions from the other, non-target releases?", ["no"],
     [("apt_preferences(5) / DESCRIPTION / APT's Default Priority Assignments", r"priority 100\nto the version that is already installed \(if any\) and to the versions coming from archives which in their Release files are marked as \"NotAutomatic: yes\" and \"ButAutomaticUpgrades: yes\" like the Debian backports archive[\s\S]*priority 500\nto the versions that do not belong to the target release")],
     {}),
    (K, "In a timer unit left at the defaults, does RandomizedDelaySec= add more slack than AccuracySec= does?", ["no"],
     [("systemd.timer(5) / OPTIONS (9)", r"As mentioned above AccuracySec= defaults to 1 minute and RandomizedDelaySec= to 0")],
     {"also": [(r"AccuracySec=\nSpecify the accuracy the timer shall elapse with\. Defaults to 1min", "systemd.timer(")]}),

    # ---- yes_no (q112-q121) -----------------------------------------------------------------
    (Y, "If I run plain ls without any --color option, will the file types come out colored?", ["no"],
     [("ls(1) / DESCRIPTION (4)", r"Using color to distinguish file types is disabled both by default and with --color=never")],
     {}),
    (Y, "Does a .gz file made by gzip carry the original file's name inside it?", ["yes"],
     [("gzip(1) / DESCRIPTION", r"By default, gzip keeps the original file name and timestamp in the compressed file")],
     {"also": [(r"-N --name\nWhen compressing, always save the original file name[^\n]*this is the default", "gzip(")]}),
    (Y, "If some other process already holds the lock, will flock sit and wait for it unless I tell it not to?", ["yes"],
     [("flock(1) / DESCRIPTION", r"By default, if the lock cannot be immediately acquired, flock waits until the lock is available")],
     {}),
    (Y, "Does wget handle cookies out of the box?", ["yes"],
     [("wget(1) / OPTIONS / HTTP Options (3)", r"The default is to use cookies; however, storing cookies is not on by default")],
     {}),
    (Y, "The machine was powered off when my daily timer should have fired. With Persistent= left unset, will the service run to catch up once it boots?", ["no"],
     [("systemd.timer(5) / OPTIONS (11)", r"Persistent=\nTakes a boolean argument\.[^\n]*This is useful to catch up on missed runs of the service when the system was powered down\.[^\n]*Defaults to false")],
     {}),
    (Y, "With journald's Storage= left alone, are logs written to disk on a machine that has no /var/log/journal directory?", ["no"],
     [("journald.conf(5) / OPTIONS", r"\"auto\" behaves like \"persistent\" if the /var/log/journal directory exists, and \"volatile\" otherwise[\s\S]*Defaults to \"auto\" in the default journal namespace")],
     {"also": [(r"By default, log data is stored persistently if /var/log/journal/ exists during boot, with an implicit fallback to volatile storage otherwise", "systemd-journald"),
               (r"On systems where /var/log/journal/ does not exist yet but where persistent logging is desired", "systemd-journald")]}),
    (Y, "Does cron note in its log when a job finishes, with the default -L level?", ["no"],
     [("cron(8) / OPTIONS", r"2    will log the end of all cron jobs[\s\S]*The default is to log the start of all jobs \(1\)")],
     {}),
    (Y, "When I log out, does systemd-logind kill the processes I left running, per its default setting?", ["no"],
     [("logind.conf(5) / OPTIONS (2)", r"KillUserProcesses=\nTakes a boolean argument\. Configures whether the processes of a user should be killed when the user logs out\.[^\n]*Defaults to \"no\"")],
     {}),
    (Y, "On a box where the pager program isn't installed, will man still print the page?", ["yes"],
     [("man(1) / OPTIONS / Controlling formatted output", r"By default, man uses pager, falling back to cat if pager is not found or is not executable")],
     {"also": [(r"By default, pager is used, falling back to cat if pager is not found or is not executable", "man(1)")]}),
    (Y, "Do XFS file systems made with a plain mkfs.xfs come with reflink support turned on?", ["yes"],
     [("mkfs.xfs(8) / OPTIONS (6)", r"By default, mkfs\.xfs will create reference count btrees and therefore will enable the reflink feature")],
     {}),

    # ---- yes_no_negated (q122-q135) ---------------------------------------------------------
    (N, "If I run systemctl disable on a running service, does it keep running afterwards?", ["yes"],
     [("systemctl(1) / COMMANDS / Unit File Commands (4)", r"Note that this command does not implicitly stop the units that are being disabled")],
     {}),
    (N, "Will uniq catch duplicate lines that are scattered around the file rather than next to each other?", ["no"],
     [("uniq(1) / DESCRIPTION", r"Note: 'uniq' does not detect repeated lines unless they are adjacent")],
     {}),
    (N, "When stdin turns out to be empty, does GNU xargs skip running the command unless I ask otherwise?", ["no"],
     [("xargs(1) / OPTIONS (4)", r"-r, --no-run-if-empty\nIf the standard input does not contain any nonblanks, do not run the command\.  Normally, the command is run once even if there is no input")],
     {}),
    (N, "Does git commit -a leave out brand-new files that I never added?", ["yes"],
     [("git-commit(1) / OPTIONS", r"-a, --all\nTell the command to automatically stage files that have been modified and deleted, but new files you have not told Git about are not affected")],
     {}),
    (N, "Is it true that a freshly made ext4 file system won't force an fsck after some number of mounts?", ["yes"],
     [("tune2fs(8) / OPTIONS", r"Mount-count-dependent checking is disabled by default")],
     {}),
    (N, "If I point gzip at a symbolic link, will it just pass over it?", ["yes"],
     [("gzip(1) / DESCRIPTION", r"The gzip command will only attempt to compress regular files\.  In particular, it will ignore symbolic links")],
     {"also": [(r"e\.g\. a symbolic link, socket, FIFO, device file\), it is left unaltered", "gzip(")]}),
    (N, "Can I count on bunzip2 not clobbering an output file that already exists, as long as I don't add -f?", ["yes"],
     [("bzip2(1) / DESCRIPTION", r"bzip2 and bunzip2 will by default not overwrite existing files\.  If you want this to happen, specify the -f flag")],
     {"also": [(r"Normally, bzip2 will not overwrite existing output files", "bzip2(")]}),
    (N, "After shred overwrites a file, is the file still there unless I passed -u?", ["yes"],
     [("shred(1) / DESCRIPTION", r"The default is not to remove the files because it is common to operate on device files")],
     {}),
    (N, "Does dpkg -r hold on to the package's conffiles?", ["yes"],
     [("dpkg(1) / ACTIONS (2)", r"-r, --remove package\.\.\.\|-a\|--pending\nRemove an installed package\.  This removes everything except conffiles")],
     {"also": [(r"The package is selected for deinstallation \(i\.e\. we want to remove all files, except configuration files\)", "dpkg(1)")]}),
    (N, "Can apt-get upgrade remove an installed package if that's what it takes to upgrade something else?", ["no"],
     [("apt-get(8) / DESCRIPTION", r"under no circumstances are currently installed packages removed, or packages not already installed retrieved and installed")],
     {}),
    (N, "When I capture with tcpdump -i any, do the interfaces get switched into promiscuous mode?", ["no"],
     [("tcpdump(8) / OPTIONS (5)", r"Note that captures on the ``any'' pseudo-interface will not be done in promiscuous mode")],
     {}),
    (N, "While grep -r walks a directory tree, does it follow the symlinks it runs into?", ["no"],
     [("grep(1) / OPTIONS / File and Directory Selection (4)", r"-r, --recursive\nRead all files under each directory, recursively, following symbolic links only if they are on the command line")],
     {"also": [(r"following symbolic links only if they are on the command line", "grep(")]}),
    (N, "Without --fail, will curl exit with an error when the server answers 404?", ["no"],
     [("curl(1) / OPTIONS (96)", r"By default curl will not error on an HTTP response code that indicates an HTTP error, if the transfer was successful")],
     {}),
    (N, "If my label for mkfs.xfs is longer than it allows, will mkfs.xfs just cut it down and create the file system anyway?", ["no"],
     [("mkfs.xfs(8) / OPTIONS (22)", r"if label is longer than 12 characters, mkfs\.xfs will not proceed with creating the filesystem")],
     {}),

    # ---- choice_neither (q136-q150) ---------------------------------------------------------
    (H, "How often does tmux redraw the status line on its own, every second or once a minute?", ["every 15 seconds", "15 seconds", "15"],
     [("tmux(1) / OPTIONS (11)", r"status-interval interval\nUpdate the status line every interval seconds\.  By default, updates will occur every 15 seconds")],
     {}),
    (H, "When I use xargs without -P, does it start one process per CPU or as many as it can?", ["1", "one at a time", "one process"],
     [("xargs(1) / OPTIONS (3)", r"-P max-procs, --max-procs=max-procs\nRun up to max-procs processes at a time; the default is 1\.  If max-procs is 0, xargs will run as many processes as possible")],
     {}),
    (H, "Is jq's pretty-printed output indented with four spaces or with tabs?", ["two spaces", "2 spaces", "2"],
     [("jq(1) / FILTERS (4)", r"--tab:\n\nUse a tab for each indentation level instead of two spaces")],
     {}),
    (H, "How many overwrite passes does shred make by default: just one, or the seven people talk about?", ["3", "three passes", "3 passes"],
     [("shred(1) / DESCRIPTION", r"-n, --iterations=N\noverwrite N times instead of the default \(3\)")],
     {}),
    (H, "If I call mktemp with no template, how many X's go into the name it uses, 6 or 8?", ["10", "ten", "tmp.XXXXXXXXXX"],
     [("mktemp(1) / DESCRIPTION", r"If TEMPLATE is not specified, use tmp\.XXXXXXXXXX, and --tmpdir is implied")],
     {}),
    (H, "For how many virtual terminals does logind spawn gettys on demand, is it 2 or is it 12?", ["6", "six"],
     [("logind.conf(5) / OPTIONS", r"NAutoVTs=\nTakes a positive integer\. Configures how many virtual terminals \(VTs\) to allocate by default[\s\S]*Defaults to 6\.")],
     {"also": [(r"Defaults to 6 \(in other words, there will always be a \"getty\" available on Alt-F6", "logind.conf(")]}),
    (H, "With --waitretry not given, what's the longest wget backs off between retries of a failed download: 5 seconds or 30?", ["10 seconds", "10"],
     [("wget(1) / OPTIONS / Download Options (12)", r"--waitretry=seconds[\s\S]*By default, Wget will assume a value of 10 seconds")],
     {}),
    (H, "I thought strace printed 64 or maybe 128 characters of each string argument. How many does it actually show by default?", ["32", "32 characters"],
     [("strace(1) / OPTIONS / Output format (4)", r"-s strsize\n--string-limit=strsize\nSpecify the maximum string size to print \(the default is 32\)")],
     {"also": [(r"Only the first strsize \(32 by default\) bytes of strings are printed", "strace(")]}),
    (H, "Between using all cores and using half of them, what does zstd do for compression threads when I don't pass -T?", ["1 thread", "1", "a single thread"],
     [("zstd(1) / OPTIONS / Operation Modifiers", r"-T#, --threads=#: Compress using # working threads \(default: 1\)")],
     {}),
    (H, "What integrity check does xz store in a new .xz file by default, CRC32 or SHA-256?", ["CRC64", "crc64"],
     [("xz(1) / OPTIONS / Basic file format and compression options (2)", r"crc64  Calculate CRC64 using the polynomial from ECMA-182\.  This is the default")],
     {"also": [(r"Since the default is --check=crc64", "xz(")]}),
    (H, "On a systemd socket unit, how long must a connection sit idle before TCP keepalive probes begin, 30 minutes or an hour?", ["7200 seconds", "2 hours", "7200"],
     [("systemd.socket(5) / OPTIONS (8)", r"KeepAliveTimeSec=\nTakes time \(in seconds\) as argument\. The connection needs to remain idle before TCP starts sending keepalive probes\.[^\n]*Defaults value is 7200 seconds \(2 hours\)")],
     {}),
    (H, "What's the default packet limit of an fq_codel qdisc, 1000 or 4096 packets?", ["10240 packets", "10240"],
     [("tc-fq_codel(8) / PARAMETERS / limit", r"is the hard limit on the real queue size\.  When this limit is reached, incoming packets are dropped\. Default is 10240 packets")],
     {}),
    (H, "How far in the future may a Release file's Date be before APT rejects it, a minute or an hour?", ["10 seconds", "10"],
     [("apt.conf(5) / THE ACQUIRE GROUP", r"Max-FutureTime\nMaximum time \(in seconds\) before its creation \(as indicated by the Date header\) that the Release file should be considered valid\. The default value is 10")],
     {"also": [(r"Acquire::Max-FutureTime which is 10 seconds by default", "sources.list(")]}),
    (H, "With -m limit and no --limit, is the default rate 10 per second or 1 per minute?", ["3/hour", "3 per hour"],
     [("iptables-extensions(8) / MATCH EXTENSIONS / length", r"--limit rate\[/second\|/minute\|/hour\|/day\]\nMaximum average matching rate:[^\n]*the default is 3/hour")],
     {"also": [(r"\(the default is 3/hour\)", "iptables-extensions("), (r"the default is 3/hour", "ebtables-nft(")]}),
    (H, "Which checksum does mkfs.btrfs pick unless told otherwise, xxhash or sha256?", ["crc32c"],
     [("mkfs.btrfs(8) / OPTIONS", r"--csum <type>, --checksum <type>\nSpecify the checksum algorithm\. Default is crc32c")],
     {"also": [(r"Specify the checksum algorithm\. Default is crc32c", "btrfs-convert("), (r"The default and backward compatible is crc32c", "btrfs(5)")]}),

    # ---- unanswerable (q151-q200) -----------------------------------------------------------
    (U, "How many paste buffers will tmux hold before it starts throwing away the oldest ones, if I never touch buffer-limit?", [], [],
     {"absent": [(r"buffer-limit[^\n]{0,300}(default|\b\d+\b)", "tmux("), (r"(?i)(up to|at most|maximum of) \d+ (paste )?buffers", "tmux(")],
      "hint": "tmux paste buffers buffer-limit stack oldest"}),
    (U, "For how many milliseconds does tmux keep a status-line message on screen by default?", [], [],
     {"absent": [(r"display-time time\n[^\n]*(default|\d+ ?(ms|milliseconds))", "tmux("), (r"\b750\b", "tmux(")],
      "hint": "tmux display-time status line messages milliseconds"}),
    (U, "What TERM value does tmux put in new windows by default, screen or tmux-256color?", [], [],
     {"absent": [(r"default-terminal terminal\n[^\n]*(default is|defaults to)", "tmux("), (r"(?i)default is [‘'\"]?(screen|tmux)", "tmux("), (r"256color", "tmux(")],
      "hint": "tmux default-terminal TERM screen"}),
    (U, "If I start git daemon without --timeout, how many seconds will it wait on a client sub-request before giving up?", [], [],
     {"absent": [(r"--timeout=<n>\n[^\n]*(default|Defaults)", "git-daemon("), (r"--init-timeout=<n>\n[^\n]*(default|Defaults)", "git-daemon(")],
      "hint": "git daemon timeout client request seconds"}),
    (U, "What User-Agent header does curl send when I don't give it -A?", [], [],
     {"absent": [(r"(?i)curl/(\d|version|<version>|\[)", "curl("), (r"(?i)user-agent[^\n]{0,200}(by default|default is|defaults to)", "curl("), (r"(?i)default user-agent", "curl(")],
      "hint": "curl user-agent header HTTP"}),
    (U, "Is /usr/bin/awk on a stock Debian 12 system mawk or gawk?", [], [],
     {"absent": [r"\bmawk\b", r"(?i)/usr/bin/awk", (r"(?i)alternatives?[^\n]{0,60}\bawk\b", "")],
      "hint": "awk gawk debian default implementation"}),
    (U, "Can grep -P match lookbehind assertions such as (?<=foo)bar?", [], [],
     {"absent": [r"(?i)look-?behind", r"\(\?<[=!]"], "hint": "grep perl regular expressions pcre"}),
    (U, "If a cron job exits non-zero, will cron try running it again?", [], [],
     {"absent": [(r"(?i)retr(y|ies|ied)", "cron"), (r"(?i)retr(y|ies|ied)", "crontab"), (r"(?i)(exit status|non-?zero)[^\n]{0,100}(again|rerun|re-run)", "cron")],
      "hint": "cron job fails exit status run again"}),
    (U, "What's fail2ban's default ban time for repeated SSH login failures?", [], [],
     {"absent": [r"(?i)fail2ban", r"(?i)\bbantime\b"], "hint": "sshd failed login attempts ban block"}),
    (U, "How many compression threads does pigz start by default?", [], [],
     {"absent": [r"(?i)pigz[^\n]{0,300}(thread|processor|cpu|default)"], "hint": "parallel gzip compression threads pigz"}),
    (U, "Which UDP port range does mosh-server pick from when I don't specify one?", [], [],
     {"absent": [r"(?i)\bmosh", r"60000[-:–]61000"], "hint": "ssh mobile shell udp port range"}),
    (U, "How often does htop refresh its display when started without options?", [], [],
     {"absent": [r"(?i)\bhtop\b"], "hint": "process viewer refresh delay interval top"}),
    (U, "What is PerSourcePenalties set to by default in sshd_config?", [], [],
     {"absent": [r"(?i)PerSourcePenalt"], "hint": "sshd_config penalties source address"}),
    (U, "Does ssh turn on ObscureKeystrokeTiming by default?", [], [],
     {"absent": [r"(?i)ObscureKeystroke", r"(?i)keystroke timing"], "hint": "ssh_config keystroke timing obfuscation"}),
    (U, "What does DefaultMemoryPressureWatch= default to in systemd-system.conf?", [], [],
     {"absent": [r"(?i)MemoryPressureWatch"], "hint": "systemd-system.conf memory pressure default"}),
    (U, "Which address does systemd-resolved's stub DNS listener answer on?", [], [],
     {"absent": [r"127\.0\.0\.5[34]", r"(?i)DNSStubListener", r"(?i)stub (resolver|listener)[^\n]{0,80}(address|listens?|127)", r"(?i)resolved[^\n]{0,100}(listen|stub)"], "hint": "systemd-resolved DNS stub listener address"}),
    (U, "Which NTP servers does systemd-timesyncd use out of the box on Debian?", [], [],
     {"absent": [r"(?i)pool\.ntp\.org", r"(?i)debian\.pool", r"(?i)timesyncd\.conf", r"(?i)FallbackNTP"], "hint": "systemd-timesyncd NTP servers default"}),
    (U, "Which of the two retries a failed download more often out of the box, wget or APT?", [], [],
     {"absent": [r"Retries[^\n]{0,200}(default|Defaults)"], "hint": "apt acquire retries wget tries download"}),
    (U, "What's the most worktrees git will let me attach to one repository?", [], [],
     {"absent": [r"(?i)(maximum|max|limit)[^\n]{0,60}worktrees", r"(?i)worktrees?[^\n]{0,60}(maximum|limit)"], "hint": "git worktree add linked working trees limit"}),
    (U, "How long can a tmux session name be?", [], [],
     {"absent": [(r"(?i)session name[^\n]{0,80}(characters|length|long|limit)", "tmux(")], "hint": "tmux new-session session name"}),
    (U, "At what time of day does Debian's stock /etc/crontab kick off the cron.daily jobs?", [], [],
     {"absent": [r"\b25 6\b", r"(?i)\b0?6:25\b", r"(?i)cron\.daily[^\n]{0,120}\b\d{1,2}:\d\d", r"(?i)every day at \d"], "hint": "debian crontab cron.daily run-parts time"}),
    (U, "What kernel default does vm.dirty_ratio have, as a percentage of memory?", [], [],
     {"absent": [r"(?i)dirty_ratio", r"(?i)dirty_background"], "hint": "sysctl vm dirty ratio writeback"}),
    (U, "What TCP port does apt-cacher-ng listen on by default?", [], [],
     {"absent": [r"(?i)apt-cacher", r"\b3142\b"], "hint": "apt proxy cache port"}),
    (U, "How much kernel capture buffer does tcpdump ask for when I leave out -B?", [], [],
     {"absent": [(r"(?i)buffer[_ -]size[^\n]{0,200}default", "tcpdump("), (r"(?i)default[^\n]{0,80}buffer", "tcpdump(")], "hint": "tcpdump capture buffer size kernel"}),
    (U, "When anacron is installed, how many minutes after boot does it wait before running the daily jobs?", [], [],
     {"absent": [r"(?i)anacron[^\n]{0,300}(delay|minutes|\d+ ?min)", r"(?i)anacrontab"], "hint": "anacron cron daily jobs boot delay"}),
    (U, "How many seconds does top wait between screen refreshes if I don't pass -d?", [], [],
     {"absent": [(r"\b3\.0\b", "top("), (r"(?i)(update|refresh|delay)[^\n]{0,80}default (is|of)|default (delay|interval)[^\n]{0,40}\d", "top(")],
      "hint": "top delay screen updates interval seconds"}),
    (U, "Out of the box, which redraws more often, top or watch?", [], [],
     {"absent": [(r"\b3\.0\b", "top("), (r"(?i)(update|refresh|delay)[^\n]{0,80}default (is|of)|default (delay|interval)[^\n]{0,40}\d", "top(")],
      "hint": "top watch refresh interval seconds default"}),
    (U, "How often does the e2scrub_all timer scrub my ext4 volumes?", [], [],
     {"absent": [(r"(?i)\b(weekly|daily|monthly|timer|cron|Sun)\b", "e2scrub_all("), r"(?i)e2scrub_all\.timer", (r"(?i)e2scrub_all[^\n]{0,100}(weekly|daily|timer)", "")],
      "hint": "e2scrub_all ext4 scrub schedule timer"}),
    (U, "On Debian, how often does fstrim.timer run?", [], [],
     {"absent": [r"(?i)fstrim\.timer", (r"(?i)\b(weekly|daily|monthly)\b", "fstrim(")], "hint": "fstrim discard schedule timer ssd"}),
    (U, "Does journald compress big journal fields with zstd or with xz by default?", [], [],
     {"absent": [(r"(?i)\b(xz|lz4|zstd|lzma)\b", "journald.conf("), (r"(?i)\b(xz|lz4|zstd|lzma)\b", "systemd-journald"), (r"(?i)\b(xz|lz4|zstd|lzma)\b", "journalctl(")],
      "hint": "journald Compress= journal compression algorithm"}),
    (U, "Which SMB dialect does mount -t cifs negotiate when I leave out vers=?", [], [],
     {"absent": [r"(?i)mount\.cifs[^\n]{0,200}(vers|dialect|SMB ?[23])", r"(?i)\bvers=", (r"(?i)(SMB|dialect)[^\n]{0,60}\b(2\.|3\.)", "mount(")],
      "hint": "mount cifs smb protocol version"}),
    (U, "What year did jq first come out?", [], [],
     {"absent": [(r"\b20(0\d|1[0-4])\b", "jq("), (r"(?i)(first|initial) (release|version)", "jq(")], "hint": "jq history release"}),
    (U, "With 4 KiB blocks, how big can a single file on ext4 get?", [], [],
     {"absent": [(r"(?i)16 ?(TiB|TB|terabytes)", "ext4("), (r"(?i)(maximum|max|largest)[^\n]{0,40}file size", "ext4("), (r"(?i)(maximum|max|largest)[^\n]{0,40}file size", "mke2fs("), (r"(?i)(maximum|max|largest)[^\n]{0,40}file size", "tune2fs(")],
      "hint": "ext4 maximum file size 4k blocks huge_file"}),
    (U, "What's the largest XFS file system I can create?", [], [],
     {"absent": [(r"(?i)(maximum|max|largest)[^\n]{0,60}(file ?system|filesystem) size", "mkfs.xfs("), (r"(?i)(maximum|max|largest)[^\n]{0,60}(file ?system|filesystem) size", "xfs("), (r"(?i)\b(8|16) ?(EiB|exabytes?)", "xfs"), (r"(?i)\b(8|16) ?(EiB|exabytes?)", "mkfs.xfs(")],
      "hint": "xfs maximum filesystem size mkfs.xfs"}),
    (U, "Does tmux keep more paste buffers by default than bash keeps commands in its history?", [], [],
     {"absent": [(r"buffer-limit[^\n]{0,300}(default|\b\d+\b)", "tmux("), (r"(?i)(up to|at most|maximum of) \d+ (paste )?buffers", "tmux(")],
      "hint": "tmux buffer-limit paste buffers bash HISTSIZE history"}),
    (U, "What's the default net.core.rmem_max on a Debian 12 kernel?", [], [],
     {"absent": [r"(?i)rmem_max", r"(?i)rmem_default"], "hint": "sysctl socket receive buffer maximum"}),
    (U, "What listen backlog does sshd use for its listening socket?", [], [],
     {"absent": [(r"(?i)backlog", "sshd"), (r"(?i)listen\(2\)", "sshd")], "hint": "sshd listen socket queue connections"}),
    (U, "On a default Debian install, how often does APT refresh the package lists in the background?", [], [],
     {"absent": [r"(?i)Periodic::", r"(?i)Update-Package-Lists", r"(?i)apt-daily\.timer[^\n]{0,100}(OnCalendar|twice a day|every \d+ hours?)"],
      "hint": "apt update package lists automatically background timer"}),
    (U, "How long will apt-get wait for the dpkg lock to be released before it gives up?", [], [],
     {"absent": [r"(?i)Lock::Timeout", (r"(?i)lock[^\n]{0,100}(wait|timeout|seconds)", "apt"), (r"(?i)lock[^\n]{0,100}(wait|timeout|seconds)", "dpkg(")],
      "hint": "apt-get dpkg lock frontend wait"}),
    (U, "If I never set http.lowSpeedLimit or http.lowSpeedTime, after how many seconds of a stalled HTTP transfer does git abort?", [], [],
     {"absent": [r"lowSpeedTime[^\n]{0,300}(default|Defaults)", r"(?i)GIT_HTTP_LOW_SPEED_TIME[^\n]{0,200}default"],
      "hint": "git http low speed limit time abort transfer"}),
    (U, "Which key combination detaches me from a GNU screen session?", [], [],
     {"absent": [r"(?i)\bscreen\b[^\n]{0,80}(C-a|Ctrl-a|\^A)", r"(?i)screen -[dr]\b"], "hint": "terminal multiplexer detach session key"}),
    (U, "If I don't set --connect-timeout, does curl give up on a connection after two minutes or after five?", [], [],
     {"absent": [(r"connect-timeout <fractional seconds>\n[^\n]*(default|Defaults)", "curl("), (r"(?i)connect(ion)?[^\n]{0,40}timeout[^\n]{0,80}default", "curl("), (r"(?i)\b(120|300) ?(s|seconds)\b", "curl(")],
      "hint": "curl connect timeout connection phase seconds"}),
    (U, "When I cp a file on btrfs without any --reflink option, does it make a CoW clone?", [], [],
     {"absent": [(r"(?i)reflink[^\n]{0,200}(default|by default)", "cp("), (r"(?i)default[^\n]{0,100}reflink", "cp(")],
      "hint": "cp reflink clone copy-on-write btrfs"}),
    (U, "Which LUKS version does cryptsetup luksFormat create by default?", [], [],
     {"absent": [r"(?i)luks1", r"(?i)luksFormat", r"(?i)cryptsetup[^\n]{0,60}default"], "hint": "cryptsetup luks format encrypted volume"}),
    (U, "How long does dhclient keep trying to get a DHCP lease before it gives up?", [], [],
     {"absent": [r"(?i)dhclient"], "hint": "dhcp client lease timeout interface"}),
    (U, "What's the default fs.inotify.max_user_watches limit that tail -f and path units run into?", [], [],
     {"absent": [r"(?i)max_user_watches", r"(?i)inotify[^\n]{0,100}(\blimit\b|maximum|max_user)"], "hint": "inotify watches limit tail follow systemd.path"}),
    (U, "How many weeks of rotated /var/log/syslog files does a stock Debian system keep?", [], [],
     {"absent": [r"(?i)rsyslog", r"(?i)logrotate", r"(?i)/var/log/syslog\.\d"], "hint": "syslog log rotation weeks keep"}),
    (U, "What yescrypt cost factor do Debian's password tools use when hashing a new password?", [], [],
     {"absent": [r"(?i)yescrypt", r"(?i)YESCRYPT_COST"], "hint": "login.defs password hashing cost rounds"}),
    (U, "How many loop devices does the kernel set up by default before losetup has to create more?", [], [],
     {"absent": [r"(?i)max_loop", r"(?i)(default|up to|maximum|number of)[^\n]{0,40}\bloop devices (are|is) (created|allocated)"], "hint": "losetup loop devices kernel number"}),
    (U, "How long is a git branch name allowed to be?", [], [],
     {"absent": [(r"(?i)(maximum|max|at most|longer than)[^\n]{0,60}(length|characters|bytes)", "git-check-ref-format("), (r"(?i)(branch|ref) ?names?[^\n]{0,60}(maximum|at most \d+|characters long|length limit)", "git-")],
      "hint": "git check-ref-format branch name rules length"}),

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
