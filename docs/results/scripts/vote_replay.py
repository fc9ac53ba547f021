#!/usr/bin/env python3
"""Votes taken by metarag's loop, split by question form, with the F1 of the answer the
vote replaced and of the vote: what "no vote on A-or-B questions" would have changed.
Counts the tuning half only unless --half says otherwise (choices are made there).

    python3 docs/results/scripts/vote_replay.py RUN.json|RUN.jsonl [...] [--half tuning|reporting]
"""
import re, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, half, f1


def is_choice(q):
    return bool(re.search(r"\bor\b", q)) and (q.strip().endswith("?"))


def main():
    want = "tuning"
    args = sys.argv[1:]
    if "--half" in args:
        want = args[args.index("--half") + 1]
        args = [a for a in args if a not in ("--half", want)]
    for path in args:
        stats = {}
        for r in load(path):
            if r["strategy"] != "metarag" or half(r["id"]) != want:
                continue
            rounds = r["trace"]["rounds"]
            for i, rd in enumerate(rounds):
                rem = rd.get("remediation") or {}
                if rem.get("action") != "vote":
                    continue
                before = max(f1(rd["short_answer"], a) for a in r["answers"])
                after = max(f1(rem["answer"], a) for a in r["answers"])
                key = "A or B" if is_choice(r["question"]) else "other"
                s = stats.setdefault(key, [0, 0, 0, 0.0])
                s[0] += 1
                s[1] += after > before
                s[2] += after < before
                s[3] += after - before
        print(f"{path.split('/')[-1][:70]} ({want} half)")
        for k, (n, up, down, delta) in sorted(stats.items()):
            print(f"   {k:7s} votes {n:3d}  up {up:2d}  down {down:2d}  sum of F1 change {delta:+.2f}")


if __name__ == "__main__":
    main()
