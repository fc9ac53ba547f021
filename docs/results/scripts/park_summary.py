"""Prompt tokens evaluated per question with and without the parked prompt.

    python3 docs/results/scripts/park_summary.py docs/results/performance/park

Reads the bench records (one JSONL per strategy and setting, `*-park-true.jsonl` /
`*-park-false.jsonl`) and prints, per record: questions, prompt tokens per question, those
the model evaluated (not served from its KV cache), the reuse rate, the LLM calls' own
seconds per question, and F1.
"""
import glob
import json
import sys

for path in sorted(glob.glob(sys.argv[1] + "/*-park-*.jsonl")):
    rows = [json.loads(line) for line in open(path)][1:]
    n = len(rows)
    prompt = evaluated = seconds = f1 = 0.0
    for r in rows:
        calls = r["trace"]["calls"]
        prompt += sum(c["prompt_tokens"] for c in calls)
        evaluated += sum(c["prompt_tokens"] - c["cached_prompt_tokens"] for c in calls)
        seconds += sum(c["ms"] for c in calls) / 1000
        f1 += r["scores"]["f1"]
    print(
        f"{path.rsplit('/', 1)[-1]}: n {n}, prompt/q {prompt / n:.0f}, evaluated/q {evaluated / n:.0f}, "
        f"reuse {100 * (1 - evaluated / prompt):.0f}%, llm s/q {seconds / n:.1f}, F1 {100 * f1 / n:.1f}"
    )

# Per strategy and data set: how many of the questions got the same prediction both ways.
for on in sorted(glob.glob(sys.argv[1] + "/*-park-true.jsonl")):
    off = on.replace("-park-true", "-park-false")
    try:
        a = {r["id"]: r["prediction"] for r in (json.loads(l) for l in open(on)) if "id" in r}
        b = {r["id"]: r["prediction"] for r in (json.loads(l) for l in open(off)) if "id" in r}
    except FileNotFoundError:
        continue
    same = sum(a[i] == b[i] for i in a if i in b)
    print(f"{on.rsplit('/', 1)[-1].replace('-park-true.jsonl', '')}: same prediction {same} of {len(a)}")
