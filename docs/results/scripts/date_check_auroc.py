#!/usr/bin/env python3
"""The monitor's AUROC on metarag's first answers, alone and with the compare node's verdict
folded in by a fixed rule (nothing fitted): where the dates confirm the first answer its
score becomes 1 + confidence, where they make the other option the answer -1 + confidence,
and anything else (not a date comparison, or undecided) keeps the gate's confidence. A first
answer is right when its short answer scores F1 >= 0.5. Prints all questions and the date
comparisons alone.

    python3 docs/results/scripts/date_check_auroc.py RUN.json [...]
"""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import auroc, f1


for path in sys.argv[1:]:
    results = json.load(open(path))["results"]
    gate, folded, gate_cmp, folded_cmp = [], [], [], []
    for r in results:
        if r["strategy"] != "metarag":
            continue
        first = r["trace"]["rounds"][0]
        conf = first["assessment"]["confidence"]
        right = max(f1(first["short_answer"], g) for g in r["answers"]) >= 0.5
        notes = [
            e.get("note") or ""
            for e in r["trace"]["graph"]["events"]
            if e["node"] == "compare"
        ]
        score = conf
        if notes:
            if "the dates confirm" in notes[0]:
                score = 1.0 + conf
            elif "the answer, not" in notes[0]:
                score = -1.0 + conf
            gate_cmp.append((conf, right))
            folded_cmp.append((score, right))
        gate.append((conf, right))
        folded.append((score, right))
    print(f"== {path}")
    print(
        f"all first answers (n = {len(gate)}): gate {auroc(gate):.3f}, "
        f"gate + dates {auroc(folded):.3f}"
    )
    print(
        f"date comparisons (n = {len(gate_cmp)}): gate {auroc(gate_cmp):.3f}, "
        f"gate + dates {auroc(folded_cmp):.3f}"
    )
