#!/usr/bin/env python3
"""What metarag's compare node (date comparisons decided in code, `agent.compare_dates`) did,
per question of a run record: the node's note (the dates read, or why it decided nothing),
and for the answers it replaced, the F1 before and after. A closing line counts questions
read as comparisons, confirmed, changed (up / down) and undecided, and how many of them
read one option's date again (a third compare call: both dates had come from one source).

    python3 docs/results/scripts/compare_effects.py RUN.json|RUN.jsonl [...]
"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, f1


def best_f1(answer, golds):
    return max(f1(answer, g) for g in golds)


for path in sys.argv[1:]:
    seen = confirmed = undecided = up = down = same = reread = 0
    print(f"== {path}")
    for r in load(path):
        if r["strategy"] != "metarag":
            continue
        events = r["trace"].get("graph", {}).get("events", [])
        notes = [e.get("note") or "" for e in events if e["node"] == "compare"]
        if not notes:
            continue
        seen += 1
        rounds = r["trace"]["rounds"]
        first = best_f1(rounds[0]["short_answer"], r["answers"])
        final = r["scores"]["f1"]
        changed = any(
            (rd.get("remediation") or {}).get("action") == "compare" for rd in rounds
        )
        if changed:
            if final > first:
                up += 1
            elif final < first:
                down += 1
            else:
                same += 1
            mark = f"changed {first:.2f} -> {final:.2f}"
        elif "confirm" in notes[0]:
            confirmed += 1
            mark = f"confirmed {final:.2f}"
        else:
            undecided += 1
            mark = f"undecided {final:.2f}"
        calls = r["trace"].get("calls")
        if isinstance(calls, list) and sum(c.get("purpose") == "compare" for c in calls) > 2:
            reread += 1
            mark += " (re-read)"
        print(f"{r['id']}  {mark}\n  Q: {r['question']}\n  gold {r['answers']}\n  {notes[0]}")
    print(
        f"{seen} read as date comparisons: {confirmed} confirmed, "
        f"{up + down + same} changed ({up} up, {down} down, {same} same F1), {undecided} undecided; "
        f"{reread} re-read one option's date"
    )
