"""Share of prompt tokens served from the local model's KV cache, per strategy and call
purpose, over bench records.

    python3 docs/results/scripts/prompt_reuse.py RECORD.jsonl [RECORD.jsonl ...]

Calls replayed from the call cache (`cached: true`) made no model call and are left out.
For each strategy and purpose: calls, prompt tokens, those served from the KV cache
(`cached_prompt_tokens`: a kept prefix, a parked prompt, the previous call's prefix), the
share, the prompt tokens the model evaluated per question, and the tokens it generated
per question.
"""
import collections
import json
import sys

calls = collections.defaultdict(lambda: [0, 0, 0, 0])
questions = collections.defaultdict(set)
for path in sys.argv[1:]:
    for line in list(open(path))[1:]:
        r = json.loads(line)
        questions[r["strategy"]].add((path, r["id"]))
        for c in r["trace"].get("calls", []):
            if c.get("cached"):
                continue
            a = calls[(r["strategy"], c.get("purpose", "?"))]
            a[0] += 1
            a[1] += c.get("prompt_tokens", 0)
            a[2] += c.get("cached_prompt_tokens", 0)
            a[3] += c.get("completion_tokens", 0)

print("| strategy | purpose | calls | prompt tokens | from cache | share | evaluated per question | generated per question |")
print("|---|---|---|---|---|---|---|---|")
for strategy in sorted(questions):
    n = len(questions[strategy])
    rows = sorted((p, a) for (s, p), a in calls.items() if s == strategy)
    total = [sum(a[i] for _, a in rows) for i in range(4)]
    for purpose, a in rows + [("**all**", total)]:
        share = a[2] / a[1] if a[1] else 0.0
        print(f"| {strategy} | {purpose} | {a[0]} | {a[1]} | {a[2]} | {share:.2f} | {(a[1] - a[2]) / n:.0f} | {a[3] / n:.0f} |")
