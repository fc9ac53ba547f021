#!/usr/bin/env python3
"""What each remedy of metarag's loop did to the answer it started from: per remedy kind,
how often the final answer's F1 went up or down against the first answer's.

    python3 docs/results/scripts/remedy_effects.py RUN.json|RUN.jsonl [...]
"""
import sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, f1

for path in sys.argv[1:]:
    stats = {}
    for r in load(path):
        if r["strategy"] != "metarag":
            continue
        rounds = r["trace"]["rounds"]
        kinds = [rd["remediation"]["action"] for rd in rounds if rd.get("remediation")]
        if not kinds:
            continue
        first = max(f1(rounds[0]["short_answer"], a) for a in r["answers"])
        final = max(f1(r["prediction"], a) for a in r["answers"])
        key = "+".join(dict.fromkeys(kinds))
        s = stats.setdefault(key, [0, 0, 0, 0.0])
        s[0] += 1
        s[1] += final > first
        s[2] += final < first
        s[3] += final - first
    print(path.split("/")[-1][:70])
    for k, (n, up, down, d) in sorted(stats.items()):
        print(f"   {k:28s} questions {n:3d}  up {up:2d}  down {down:2d}  sum of F1 change {d:+.2f}")
