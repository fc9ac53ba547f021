"""Per-strategy trace statistics of a QA results file (.jsonl) or record (.json):
mean F1, how often each strategy is right where standard is wrong and vice versa, steps,
calls, tokens, support recall, stop reasons, and per strategy the questions it lost
against standard with their predictions. Used for docs/results/strategies.md.

    python3 docs/results/scripts/strategy_traces.py runs/RUN.jsonl [--losses N]
"""
import collections
import json
import statistics
import sys


def load(path):
    if path.endswith(".jsonl"):
        lines = open(path).read().splitlines()
        return [json.loads(l) for l in lines[1:] if l.strip()]
    return json.load(open(path))["results"]


def main():
    path = sys.argv[1]
    show = int(sys.argv[sys.argv.index("--losses") + 1]) if "--losses" in sys.argv else 3
    rows = load(path)
    by = collections.defaultdict(dict)
    for r in rows:
        by[r["strategy"]][r["id"]] = r
    ids = set.intersection(*(set(v) for v in by.values()))
    std = by.get("standard", {})
    print(f"{len(ids)} questions answered by all {len(by)} strategies\n")
    print("| strategy | F1 | EM | wins/ties/losses vs standard | steps | calls | tokens | support recall | stops |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s, rs in by.items():
        xs = [rs[i] for i in sorted(ids)]
        f1 = statistics.mean(r["scores"]["f1"] for r in xs) * 100
        em = statistics.mean(r["scores"]["em"] for r in xs) * 100
        w = t = l = 0
        for i in sorted(ids):
            d = rs[i]["scores"]["f1"] - std[i]["scores"]["f1"] if std else 0
            w, t, l = w + (d > 1e-9), t + (abs(d) <= 1e-9), l + (d < -1e-9)
        tr = [r.get("trace") or {} for r in xs]
        steps = statistics.mean(len(t_.get("steps", [])) for t_ in tr)
        calls = statistics.mean((t_.get("usage") or {}).get("llm_calls", 0) for t_ in tr)
        toks = statistics.mean(
            (t_.get("usage") or {}).get("prompt_tokens", 0) + (t_.get("usage") or {}).get("completion_tokens", 0)
            for t_ in tr
        )
        sr = [r["support_recall"] for r in xs if r.get("support_recall") is not None]
        srs = f"{statistics.mean(sr) * 100:.0f}" if sr else "-"
        stops = collections.Counter(
            (t_.get("stop") or {}).get("kind", "?") if isinstance(t_.get("stop"), dict) else str(t_.get("stop"))
            for t_ in tr
        )
        print(f"| {s} | {f1:.1f} | {em:.1f} | {w}/{t}/{l} | {steps:.1f} | {calls:.1f} | {toks:.0f} | {srs} | {dict(stops)} |")
    if not std:
        return
    for s, rs in by.items():
        if s == "standard":
            continue
        losses = [i for i in sorted(ids) if rs[i]["scores"]["f1"] < std[i]["scores"]["f1"] - 1e-9]
        print(f"\n{s}: {len(losses)} losses against standard")
        for i in losses[:show]:
            r = rs[i]
            print(f"  {r['question'][:90]!r}\n    gold {r['answers'][0]!r}; standard {std[i]['prediction']!r}; {s} {r['prediction']!r}")
            for st in (r.get("trace") or {}).get("steps", [])[:6]:
                print(f"      [{st['kind']}] {st['text'][:110]!r}")


if __name__ == "__main__":
    main()
