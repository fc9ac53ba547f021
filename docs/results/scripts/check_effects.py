#!/usr/bin/env python3
"""What a check in code did on a run record: per question, the first answer, what the
check's node decided (confirmed / replaced / undecided, with its note), the final answer,
and F1 against gold; with totals, and the mean F1 of metarag and standard RAG on the same
questions.

    python3 docs/results/scripts/check_effects.py RUN.json|RUN.jsonl [--check quantity|kin|dates|parts|link]
"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, f1  # noqa: E402

# node, the stop reason of a confirmed answer, the remediation action of a replaced one
CHECKS = {
    "quantity": ("measure", "the quantities confirm the answer", "measure"),
    "kin": ("kin", "the relation chain confirms the answer", "kin"),
    "dates": ("compare", "the dates confirm the answer", "compare"),
    "parts": ("parts", "the parts confirm the answer", "parts"),
    "link": ("link", "the linked question confirms the answer", "link"),
}


def main(path, check):
    node, confirm, action = CHECKS[check]
    rs = load(path)
    std = {r["id"]: r["scores"]["f1"] for r in rs if r["strategy"] == "standard"}
    tot = {"confirmed": [0, 0], "replaced": [0, 0], "undecided": [0, 0], "not asked": [0, 0]}
    up = down = 0
    f1s = []
    for r in rs:
        if r["strategy"] != "metarag":
            continue
        t = r["trace"]
        first = t["rounds"][0]["short_answer"]
        right_first = max(f1(first, a) for a in r["answers"]) >= 0.5
        notes = [e.get("note") or "" for e in t["graph"]["events"] if e["node"] == node]
        stop = t["stop"]["detail"] if isinstance(t["stop"], dict) else str(t["stop"])
        rem = t["rounds"][0].get("remediation") or {}
        if stop == confirm:
            kind = "confirmed"
        elif rem.get("action") == action:
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
        f1s.append((r["scores"]["f1"], std.get(r["id"])))
        print(f"{kind:9} first={first[:30]!r:32} final={t['short_answer'][:30]!r:32} right {int(right_first)}->{int(final_right)} "
              f"std {std.get(r['id'], float('nan')):.2f} | {r['question'][:70]}")
        for n in notes:
            print("           ", n[:200])
    print({k: f"{v[1]}/{v[0]} right" for k, v in tot.items()}, f"replaced: {up} up, {down} down")
    paired = [(m, s) for m, s in f1s if s is not None]
    if paired:
        n = len(paired)
        print(f"F1 on these {n}: metarag {100 * sum(m for m, _ in paired) / n:.1f}, "
              f"standard {100 * sum(s for _, s in paired) / n:.1f}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    check = "quantity"
    if "--check" in sys.argv:
        check = sys.argv[sys.argv.index("--check") + 1]
        args = [a for a in args if a != check]
    main(args[0], check)
