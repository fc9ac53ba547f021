#!/usr/bin/env python3
"""Pairs a benchmark run's first answers with the write call that produced them.

For every row of a `metarag bench` run (JSONL), finds in the call cache the write request
and completion of its first round (same question, same prompt size as the trace's first
write call, same short answer) and writes one line per row for the `hidden_states`
example: `id` = "<question id>/<strategy>", `messages`, `completion`, plus `f1` and `split`
for fitting, sorted by split and question. Rows whose call is not in the cache are counted and skipped.

usage: probe_pairs.py CACHE.sqlite RUN.jsonl [RUN.jsonl ...] > pairs.jsonl
"""
import json
import sqlite3
import sys
from collections import defaultdict


def main():
    cache, runs = sys.argv[1], sys.argv[2:]
    by_question = defaultdict(list)
    for req, comp in sqlite3.connect(cache).execute("SELECT request, completion FROM calls"):
        r = json.loads(req)
        if (r.get("schema") or {}).get("name") != "WriteReply":
            continue
        user = r["messages"][-1]["content"]
        i = user.rfind("\nQuestion: ")
        if i < 0:
            continue
        question = user[i + len("\nQuestion: "):].split("\n", 1)[0]
        c = json.loads(comp)
        by_question[question].append((r, c))
    found = missing = 0
    out = []
    for run in runs:
        split = "tuning" if "-tuning" in run else "reporting" if "-reporting" in run else "?"
        with open(run) as f:
            lines = f.readlines()
        for line in lines[1:]:
            row = json.loads(line)
            t = row.get("trace") or {}
            writes = [c for c in t.get("calls", []) if c.get("purpose") == "write"]
            rounds = t.get("rounds") or []
            short = rounds[0]["short_answer"] if rounds else t.get("short_answer")
            if not writes or short is None:
                missing += 1
                continue
            tokens = writes[0]["prompt_tokens"]
            match = None
            for r, c in by_question.get(row["question"], []):
                if c.get("usage", {}).get("prompt_tokens") != tokens:
                    continue
                try:
                    s = json.loads(c["text"]).get("short_answer")
                except json.JSONDecodeError:
                    continue
                if s == short:
                    match = (r, c)
                    break
            if match is None:
                missing += 1
                continue
            found += 1
            r, c = match
            out.append({
                "id": f"{row['id']}/{row['strategy']}",
                "dataset": run.split("/")[-1].split("-")[0],
                "split": split,
                "strategy": row["strategy"],
                "kind": row.get("kind"),
                "f1": row["scores"]["f1"],
                # The existing monitor's confidence in this first answer (metarag only).
                "monitor": (rounds[0].get("assessment") or {}).get("confidence") if rounds else None,
                "messages": r["messages"],
                "completion": c["text"],
            })
    # One question's answers next to each other: their prompts share a prefix that the
    # hidden_states example then evaluates once.
    out.sort(key=lambda p: (p["split"] != "tuning", p["id"]))
    for p in out:
        print(json.dumps(p))
    print(f"{found} paired, {missing} without their call in the cache", file=sys.stderr)


if __name__ == "__main__":
    main()
