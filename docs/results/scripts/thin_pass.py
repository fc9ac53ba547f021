#!/usr/bin/env python3
"""What declining a thin pass over an unsettled program would have scored (truthfulness.md,
"A pass the program did not back"), from bench records, without a model call.

For each record: the passed answers whose question program did not settle them (stopped
at a step, invalid, ...) by right and wrong with their median monitor confidence; then the
CRAG truthfulness at the `[agent] abstain` default 0.35 when such a pass under
gate + margin is declined, for each margin and each set of program outcomes counted.
Truth per answer and the other declines as in abstain_sweep.py (beside this file).

    python3 docs/results/scripts/thin_pass.py RUN.jsonl [RUN.jsonl ...]
"""
import json
import statistics
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from abstain_sweep import declined, truth  # noqa: E402

GATE = 0.609  # the shipped monitor's gate over an index (MonitorModel::default_open)
MARGINS = [0, 0.05, 0.08, 0.1, 0.12, 0.15]
OUTCOMES = [("unresolved",), ("unresolved", "invalid"), ("unresolved", "invalid", "skipped", "none")]


def facts(r):
    tr = r.get("trace") or {}
    p = (tr.get("records") or {}).get("program") or {}
    outcome = (p.get("outcome") or {}).get("outcome", "none")
    i = tr.get("final_round")
    a = tr["rounds"][i].get("assessment") if i is not None else None
    return outcome, a


def main():
    for path in sys.argv[1:]:
        rows = [json.loads(l) for l in open(path) if l.strip()]
        rows = [r for r in rows if r.get("strategy") == "metarag"]
        print(f"## {path}\n")
        by = {}
        for r in rows:
            outcome, a = facts(r)
            if a and a["passed"] and outcome != "resolved":
                by.setdefault(truth(r, declined(r, None)), []).append(a["confidence"])
        for t, cs in sorted(by.items()):
            print(f"passed after an unsettled program, {t}: {len(cs)}, median confidence {statistics.median(cs):.2f}")
        print()
        print("| outcomes counted | " + " | ".join(f"margin {m}" for m in MARGINS) + " |")
        print("|---|" + "---|" * len(MARGINS))
        for outs in OUTCOMES:
            cells = []
            for m in MARGINS:
                c = h = 0
                for r in rows:
                    outcome, a = facts(r)
                    d = declined(r, 0.35)
                    if a and a["passed"] and outcome in outs and a["confidence"] < GATE + m:
                        d = True
                    t = truth(r, d)
                    c += t == "correct"
                    h += t == "hallucinated"
                n = len(rows)
                cells.append(f"{100 * (c - h) / n:+.0f} (acc {100 * c / n:.0f}, hall {100 * h / n:.0f})")
            print(f"| {', '.join(outs)} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
