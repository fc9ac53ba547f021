#!/usr/bin/env python3
"""How metarag's question programs ended in bench records (no model calls): resolved,
skipped (one plain read left to the write), invalid, or unresolved, and for the
unresolved ones the op and reason they stopped at, with names, numbers and quotes blanked
so that the same reason counts together (program.md, "Seventh session").

    python3 docs/results/scripts/unresolved_reasons.py RUN.jsonl [RUN.jsonl ...]
"""
import collections
import json
import re
import sys


def main():
    counts = collections.Counter()
    total = 0
    for path in sys.argv[1:]:
        for line in open(path):
            r = json.loads(line)
            if r.get("strategy") != "metarag":
                continue
            total += 1
            program = ((r.get("trace") or {}).get("records") or {}).get("program") or {}
            outcome = program.get("outcome") or {}
            if outcome.get("outcome") != "unresolved":
                counts[outcome.get("outcome")] += 1
                continue
            reason = re.sub(r'"[^"]*"', "X", outcome.get("reason", ""))
            reason = re.sub(r"\(quote.*", "", reason)
            reason = re.sub(r"\[\d+\]", "[n]", reason).strip()[:60]
            counts[(outcome.get("op"), reason)] += 1
    print(f"{total} metarag answers")
    for key, n in counts.most_common(20):
        print(n, key)


if __name__ == "__main__":
    main()
