#!/usr/bin/env python3
"""Paired comparison of two QA run records (finished .json or in-progress .jsonl) on the
questions both answered, per strategy: mean F1, EM and support recall in each, the paired
F1 difference with a bootstrap 95% interval (1,000 resamples, seed 7), and wins/ties/losses.

    python3 docs/results/scripts/paired_compare.py BEFORE.json AFTER.json[l] [--strategy s,t]
"""
import json
import random
import sys


def load(path):
    if path.endswith(".jsonl"):
        rows = []
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if "config" not in r:
                    rows.append(r)
        return rows
    return json.load(open(path))["results"]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    strategies = None
    for i, a in enumerate(sys.argv):
        if a == "--strategy":
            strategies = sys.argv[i + 1].split(",")
    before = {(r["strategy"], r["id"]): r for r in load(args[0])}
    after = {(r["strategy"], r["id"]): r for r in load(args[1])}
    names = sorted({s for s, _ in after} & {s for s, _ in before})
    if strategies:
        names = [s for s in names if s in strategies]
    print("| strategy | n | F1 before | F1 after | difference [95% CI] | wins/ties/losses | EM before / after | support recall before / after |")
    print("|---|---|---|---|---|---|---|---|")
    rng = random.Random(7)
    for s in names:
        keys = sorted(k for k in after if k[0] == s and k in before)
        if not keys:
            continue
        f1b = [before[k]["scores"]["f1"] for k in keys]
        f1a = [after[k]["scores"]["f1"] for k in keys]
        d = [a - b for a, b in zip(f1a, f1b)]
        n = len(d)
        boots = sorted(sum(rng.choice(d) for _ in range(n)) / n for _ in range(1000))
        mean = lambda xs: 100 * sum(xs) / len(xs)
        emb = [before[k]["scores"]["em"] for k in keys]
        ema = [after[k]["scores"]["em"] for k in keys]
        srb = [before[k].get("support_recall") or 0 for k in keys]
        sra = [after[k].get("support_recall") or 0 for k in keys]
        wins = sum(x > 1e-9 for x in d)
        losses = sum(x < -1e-9 for x in d)
        print(
            f"| {s} | {n} | {mean(f1b):.1f} | {mean(f1a):.1f} | {mean(d):+.1f} "
            f"[{100 * boots[25]:+.1f}, {100 * boots[974]:+.1f}] | {wins}/{n - wins - losses}/{losses} "
            f"| {mean(emb):.1f} / {mean(ema):.1f} | {mean(srb):.1f} / {mean(sra):.1f} |"
        )


if __name__ == "__main__":
    main()
