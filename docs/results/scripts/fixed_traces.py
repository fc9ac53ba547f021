#!/usr/bin/env python3
"""Where metarag's loop changed its own first answer, question by question, from a run
record: the first short answer and its F1, the gate's decision and score, the first
diagnosis (category, error types, the query it suggests), each remediation (a re-retrieval's
query and how many passages it added, a writing directive, or the dates of a comparison)
with the short answer that round gave, the stop reason, and standard RAG's answer on the
same question when the run has it. `--fixed` keeps the answers the loop improved (final F1
above the first's); `--worse` the ones it made worse; default both.

    python3 docs/results/scripts/fixed_traces.py RUN.json|RUN.jsonl [--fixed|--worse] [--limit N]
"""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, f1


def best_f1(answer, golds):
    return max(f1(answer, g) for g in golds)


def remedy(rem):
    action = rem.get("action")
    if action == "retrieve":
        return f're-retrieve "{rem.get("query", "")}"'
    if action == "compare":
        dates = "; ".join(
            f'{d["option"]} {d["date"]} [{d["source"]}]' for d in rem.get("dates", [])
        )
        return f"dates decide it: {dates}"
    if action == "vote":
        return f'vote of {rem.get("samples")} samples: "{rem.get("answer")}"'
    return json.dumps(rem, ensure_ascii=False)[:200]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    want = "fixed" if "--fixed" in sys.argv else "worse" if "--worse" in sys.argv else None
    limit = None
    if "--limit" in sys.argv:
        limit = int(sys.argv[sys.argv.index("--limit") + 1])
        args.remove(str(limit))
    for path in args:
        rows = load(path)
        standard = {r["id"]: r for r in rows if r["strategy"] == "standard"}
        shown = 0
        for r in rows:
            if r["strategy"] != "metarag":
                continue
            t = r["trace"]
            rounds = t["rounds"]
            first = best_f1(rounds[0]["short_answer"], r["answers"])
            final = r["scores"]["f1"]
            if final == first or (want == "fixed" and final < first) or (
                want == "worse" and final > first
            ):
                continue
            if limit is not None and shown >= limit:
                break
            shown += 1
            print(f"### {r['question']}")
            print(f"- id `{r['id']}`, gold {r['answers'][:2]}")
            a = rounds[0].get("assessment") or {}
            gate = "passed" if a.get("passed") else "failed"
            score = a.get("confidence")
            score = f" (confidence {score:.2f})" if isinstance(score, (int, float)) else ""
            print(f"- first answer \"{rounds[0]['short_answer']}\" (F1 {first:.2f}); gate {gate}{score}")
            d = rounds[0].get("diagnosis")
            if d:
                errs = ", ".join(d.get("error_types") or []) or "none"
                print(
                    f"- diagnosis {d.get('category')} (error types: {errs}); "
                    f"suggested query \"{d.get('suggested_query', '')}\""
                )
            for rd in rounds:
                rem = rd.get("remediation")
                if rem:
                    print(f"- round {rd['index']}: {remedy(rem)}")
            for rd in rounds[1:]:
                print(f"- round {rd['index']} answer \"{rd['short_answer']}\"")
            stop = t.get("stop") or {}
            print(
                f"- kept \"{r['prediction']}\" (F1 {final:.2f}); stop: "
                f"{stop.get('kind')} ({stop.get('detail', '')})"
            )
            s = standard.get(r["id"])
            if s:
                print(f"- standard RAG: \"{s['prediction']}\" (F1 {s['scores']['f1']:.2f})")
            print()


if __name__ == "__main__":
    main()
