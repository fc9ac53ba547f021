#!/usr/bin/env python3
"""What the quantity check (measure node) did on a run record: per question, the first
answer, what the node decided (confirmed / replaced / undecided, with its note), the final
answer, and F1 against gold; with totals. Standard RAG's F1 on the same question beside.

    python3 docs/results/scripts/quantity_effects.py RUN.json|RUN.jsonl
"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, f1  # noqa: E402

rs = load(sys.argv[1])
std = {r["id"]: r["scores"]["f1"] for r in rs if r["strategy"] == "standard"}
tot = {"confirmed": [0, 0], "replaced": [0, 0], "undecided": [0, 0], "not asked": [0, 0]}
up = down = 0
for r in rs:
    if r["strategy"] != "metarag":
        continue
    t = r["trace"]
    first = t["rounds"][0]["short_answer"]
    right_first = max(f1(first, a) for a in r["answers"]) >= 0.5
    notes = [e.get("note") or "" for e in t["graph"]["events"] if e["node"] == "measure"]
    stop = t["stop"]["detail"] if isinstance(t["stop"], dict) else str(t["stop"])
    rem = t["rounds"][0].get("remediation") or {}
    if stop == "the quantities confirm the answer":
        kind = "confirmed"
    elif rem.get("action") == "measure":
        kind = "replaced"
    elif notes:
        kind = "undecided"
    else:
        kind = "not asked"
    final_right = max(f1(t["short_answer"], a) for a in r["answers"]) >= 0.5
    tot[kind][0] += 1
    tot[kind][1] += final_right
    if kind == "replaced":
        up += final_right and not right_first
        down += right_first and not final_right
    print(f"{kind:9} first={first[:30]!r:32} final={t['short_answer'][:30]!r:32} right {int(right_first)}->{int(final_right)} "
          f"std {std.get(r['id'], float('nan')):.2f} | {r['question'][:70]}")
    for n in notes:
        print("           ", n[:160])
print({k: f"{v[1]}/{v[0]} right" for k, v in tot.items()}, f"replaced: {up} up, {down} down")
