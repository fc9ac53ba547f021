#!/usr/bin/env python3
"""Seconds per question of one bench run against another over the same questions.

Usage: question_time.py BEFORE.jsonl AFTER.jsonl

Both are `bench --strategy ... --no-cache` records of the same questions (same data set,
split, n and seed), made by two builds one after the other on one machine. Prints, per
strategy, the p50 / mean / p95 seconds of each, the ratio of the medians, the paired
median of per-question ratios, and how many answers are the same text, with the ones
that are not and their F1 before and after.
"""
import json
import statistics
import sys


def rows(path):
    with open(path) as f:
        out = [json.loads(line) for line in f]
    return [r for r in out if r.get("strategy")]


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    before, after = rows(sys.argv[1]), rows(sys.argv[2])
    strategies = sorted({r["strategy"] for r in before})
    print("| strategy | n | before p50 s | after p50 s | p50 ratio | paired median ratio | before mean | after mean | before p95 | after p95 | same answer | F1 before | F1 after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    changed = []
    for s in strategies:
        b = {r["id"]: r for r in before if r["strategy"] == s}
        a = {r["id"]: r for r in after if r["strategy"] == s}
        ids = [i for i in b if i in a]
        tb = [b[i]["latency_ms"] / 1e3 for i in ids]
        ta = [a[i]["latency_ms"] / 1e3 for i in ids]
        ratios = [y / x for x, y in zip(tb, ta) if x > 0]
        same = sum(b[i]["prediction"] == a[i]["prediction"] for i in ids)
        f1b = 100 * statistics.mean(b[i]["scores"]["f1"] for i in ids)
        f1a = 100 * statistics.mean(a[i]["scores"]["f1"] for i in ids)
        print(f"| {s} | {len(ids)} | {pct(tb, 50):.1f} | {pct(ta, 50):.1f} | {pct(ta, 50) / pct(tb, 50):.2f} | "
              f"{statistics.median(ratios):.2f} | {statistics.mean(tb):.1f} | {statistics.mean(ta):.1f} | "
              f"{pct(tb, 95):.1f} | {pct(ta, 95):.1f} | {same} of {len(ids)} | {f1b:.1f} | {f1a:.1f} |")
        for i in ids:
            if b[i]["prediction"] != a[i]["prediction"]:
                changed.append((s, i, b[i]["prediction"], b[i]["scores"]["f1"], a[i]["prediction"], a[i]["scores"]["f1"]))
    if changed:
        print("\nAnswers that differ (strategy, id, before [F1], after [F1]):")
        for s, i, pb, fb, pa, fa in changed:
            print(f"- {s} `{i}`: {pb!r} [{fb:.2f}] -> {pa!r} [{fa:.2f}]")


if __name__ == "__main__":
    main()
