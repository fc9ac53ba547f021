#!/usr/bin/env python3
"""metarag's median seconds per question against standard RAG's, measured fairly.

Usage: timing_ratio.py PAIRED.json [STANDARD_ALONE.json]

PAIRED is a `bench --strategy metarag,standard --no-cache` record; STANDARD_ALONE a
`bench --strategy standard --no-cache` record of the same questions, run on its own.
In a paired run standard answers each question right after metarag, and the local model's
KV cache still holds the sources metarag's last calls evaluated: standard's write then
skips most of its prompt (the "reused" tokens), which no user running standard alone gets.
The fair ratio divides by standard's seconds from the run on its own; both are printed,
with the reuse that separates them and where metarag's seconds go (per call purpose).
"""
import collections
import json
import statistics
import sys


def results(path):
    with open(path) as f:
        if path.endswith(".jsonl"):
            return [json.loads(line) for line in f][1:]
        return json.load(f)["results"]


def by_id(rows, strategy):
    return {r["id"]: r for r in rows if r["strategy"] == strategy}


def seconds(r):
    return r["latency_ms"] / 1000


def write_reuse(r):
    calls = [c for c in r["trace"]["calls"] if c["purpose"] == "write"]
    return sum(c["cached_prompt_tokens"] for c in calls), sum(c["prompt_tokens"] for c in calls)


def main():
    paired = results(sys.argv[1])
    meta, std = by_id(paired, "metarag"), by_id(paired, "standard")
    alone = by_id(results(sys.argv[2]), "standard") if len(sys.argv) > 2 else {}
    ids = [k for k in meta if k in std and (not alone or k in alone)]
    med = statistics.median
    m = med([seconds(meta[k]) for k in ids])
    s = med([seconds(std[k]) for k in ids])
    print(f"questions: {len(ids)}")
    print(f"metarag median {m:.2f} s; standard in the paired run {s:.2f} s: {m / s:.2f}x")
    reused = sum(write_reuse(std[k])[0] for k in ids) / len(ids)
    prompt = sum(write_reuse(std[k])[1] for k in ids) / len(ids)
    print(f"  standard's write reused {reused:.0f} of {prompt:.0f} prompt tokens per question")
    if alone:
        a = med([seconds(alone[k]) for k in ids])
        reused = sum(write_reuse(alone[k])[0] for k in ids) / len(ids)
        print(f"standard alone {a:.2f} s (reused {reused:.0f} tokens): {m / a:.3f}x")
    per = collections.defaultdict(list)
    calls = collections.Counter()
    for k in ids:
        spent = collections.Counter()
        for c in meta[k]["trace"]["calls"]:
            spent[c["purpose"]] += c["ms"] / 1000
            calls[c["purpose"]] += 1
        for purpose in calls:
            per[purpose].append(spent.get(purpose, 0.0))
    print("| purpose | calls per question | mean s | median s |")
    print("|---|---|---|---|")
    for purpose, spent in sorted(per.items(), key=lambda kv: -sum(kv[1])):
        spent = spent + [0.0] * (len(ids) - len(spent))
        print(
            f"| {purpose} | {calls[purpose] / len(ids):.2f} | {sum(spent) / len(ids):.2f} | {med(spent):.2f} |"
        )


if __name__ == "__main__":
    main()
