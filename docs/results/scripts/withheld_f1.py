#!/usr/bin/env python3
"""F1 on the answerable questions with metarag's held-back answers restored, from bench
records without a model call: what the question program and the writer answered, apart
from declining (truthfulness.md, "F1 apart from declining").

metarag declines after writing (checks `monitor`, `program`, `search`, `off_subject`,
`uncited`) keep the answer they held back in the trace; this scores the kept round's
short answer in their place, as `abstain = "off"` would have printed it, except that with
declining off the writer is not offered "unknown" either, so the writer's own declines
(and `unmentioned`, which declines before writing) stay as they are, for both strategies.
Scoring as crates/eval/src/metrics.rs (SQuAD normalisation, token F1, max over aliases).

    python3 docs/results/scripts/withheld_f1.py RUN.jsonl [RUN.jsonl ...]
"""
import collections
import json
import random
import re
import string
import sys

AFTER_WRITING = {"monitor", "program", "search", "off_subject", "uncited"}


def norm(s):
    s = "".join(c for c in s.lower() if c not in string.punctuation)
    return " ".join(w for w in s.split() if w not in ("a", "an", "the"))


def f1(pred, gold):
    p, a = norm(pred), norm(gold)
    if (p in ("yes", "no", "noanswer") or a in ("yes", "no", "noanswer")) and p != a:
        return 0.0
    pt, at = p.split(), a.split()
    common = sum((collections.Counter(pt) & collections.Counter(at)).values())
    if common == 0:
        return 0.0
    pr, rc = common / len(pt), common / len(at)
    return 2 * pr * rc / (pr + rc)


def score(pred, answers):
    return max((f1(pred, a) for a in answers), default=0.0)


def main():
    for path in sys.argv[1:]:
        rows = [json.loads(l) for l in open(path) if l.strip()]
        rows = [r for r in rows if "strategy" in r and any(a.strip() for a in r["answers"])]
        by = collections.defaultdict(dict)
        restored = 0
        for r in rows:
            s = r["scores"]["f1"]
            tr = r.get("trace") or {}
            ab = tr.get("abstention") or {}
            if r["strategy"] == "metarag" and tr.get("abstained") and ab.get("by") in AFTER_WRITING:
                i = tr.get("final_round")
                rounds = tr.get("rounds") or []
                if i is not None and i < len(rounds):
                    s = score(rounds[i].get("short_answer", ""), r["answers"])
                    restored += 1
            by[r["strategy"]][r["id"]] = s
        ids = sorted(set(by.get("standard", {})) & set(by.get("metarag", {})))
        if not ids:
            continue
        d = [by["metarag"][i] - by["standard"][i] for i in ids]
        rng = random.Random(0)
        boots = sorted(
            sum(rng.choice(d) for _ in d) / len(d) for _ in range(2000)
        )
        mean = lambda k: 100 * sum(by[k][i] for i in ids) / len(ids)
        print(f"{path}\n  answerable {len(ids)}, metarag declines restored {restored}: "
              f"standard F1 {mean('standard'):.1f}, metarag F1 {mean('metarag'):.1f}, "
              f"difference {100 * sum(d) / len(d):+.1f} [{100 * boots[50]:+.1f}, {100 * boots[1949]:+.1f}]")


if __name__ == "__main__":
    main()
