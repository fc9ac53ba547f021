#!/usr/bin/env python3
"""What the parts node did on yes/no questions about two things ("Are A and B both P?"):
per question the written verdict, the parts' verdicts (from the node's note), the final
answer and the gold, and the counts: confirmed right / wrong, replaced up / down,
undecided. Reads run records (.json or .jsonl).

    python3 docs/results/scripts/parts_effects.py RUN.json [...]
"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import f1, load

for path in sys.argv[1:]:
    counts = {}
    print(f"== {path}")
    for r in load(path):
        if r["strategy"] != "metarag" or "trace" not in r:
            continue
        t = r["trace"]
        notes = [e.get("note") or "" for e in t["graph"]["events"] if e["node"] == "parts"]
        if not notes:
            continue
        first = t["rounds"][0]["short_answer"]
        final = t["short_answer"]
        gold = r["answers"]
        ok = lambda a: max(f1(a, g) for g in gold) >= 0.5
        note = notes[0]
        if note.startswith("the parts confirm"):
            kind = "confirmed right" if ok(first) else "confirmed wrong"
        elif note.startswith("the parts make"):
            kind = {(False, True): "replaced up", (True, False): "replaced down"}.get(
                (ok(first), ok(final)), "replaced, same"
            )
        else:
            kind = "undecided, right" if ok(first) else "undecided, wrong"
        counts[kind] = counts.get(kind, 0) + 1
        print(f"  {kind:16s} gold {gold[0]:4s} first {first:4s} final {final:4s} | {r['question'][:70]} | {note[:120]}")
    print("  " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
