#!/usr/bin/env python3
"""What each `[agent] abstain` threshold would have scored, from one bench results file.

Run the bench once with `--abstain 0` (declining on, the monitor-confidence rule off: only
the writer's, the search's and the program's declines), then sweep the threshold here:
metarag's monitor decline is decided after the run from the kept round's confidence, so
every threshold is read off the same traces without another model call. The decline rules
mirror `decide` in crates/agent/src/strategies/metarag.rs: only a run whose answer did not
pass the monitor declines (it went through `decide`, or stopped because a re-retrieval
found nothing); a search that found nothing declines at any threshold.

Truth per answer, CRAG's rules without a judge (crates/eval/src/truth.rs): a question with
no gold answer is correct iff declined; EM or Sub-EM -> correct; declined -> missing;
F1 0 -> hallucinated; else correct iff F1 >= 0.5. A monitor decline at a threshold above
the run's would score the held-back answer as missing; one below it cannot be undone here
(run with --abstain 0 so that none happened).

    python3 docs/results/scripts/abstain_sweep.py RESULTS.jsonl [T ...]
"""
import collections
import json
import sys

REFUSALS = {"", "unknown", "not known", "n/a", "no answer"}


def truth(r, declined):
    if all(not a.strip() for a in r["answers"]):
        return "correct" if declined or r.get("error") else "hallucinated"
    s = r["scores"]
    if not r.get("error") and not declined and (s["em"] >= 1 or s.get("sub_em", 0) >= 1):
        return "correct"
    if r.get("error") or declined:
        return "missing"
    if s["f1"] <= 0:
        return "hallucinated"
    return "correct" if s["f1"] >= 0.5 else "hallucinated"


def declined(r, t):
    tr = r.get("trace") or {}
    if tr.get("abstained") or r["prediction"].strip().lower().rstrip(".!") in REFUSALS:
        return True
    if r["strategy"] != "metarag" or t is None:
        return False
    i = tr.get("final_round")
    if i is None:
        return False
    a = tr["rounds"][i].get("assessment")
    if a is None or a["passed"]:
        return False
    stop = (tr.get("stop") or {}).get("detail", "")
    if "found nothing for the missing hop" in stop:
        return True
    nodes = [e["node"] for e in tr.get("graph", {}).get("events", [])]
    stopped_unpassed = "decide" in nodes or stop.startswith(("max_rounds", "converged", "no remedy"))
    return stopped_unpassed and a["confidence"] < t


def main():
    rows = [json.loads(l) for l in open(sys.argv[1])]
    rows = [r for r in rows if "strategy" in r]
    ts = [float(x) for x in sys.argv[2:]] or [0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6]
    print("| strategy | abstain | n | accuracy | hallucination | missing | truthfulness | declined | precision | recall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for strategy in sorted({r["strategy"] for r in rows}):
        rs = [r for r in rows if r["strategy"] == strategy]
        for t in [None] if strategy != "metarag" else ts:
            c = collections.Counter(truth(r, declined(r, t)) for r in rs)
            n = len(rs)
            gone = [r for r in rs if all(not a.strip() for a in r["answers"])]
            out = [r for r in rs if declined(r, t)]
            prec = sum(r in gone for r in out) / len(out) if out else float("nan")
            rec = sum(declined(r, t) for r in gone) / len(gone) if gone else float("nan")
            pct = lambda k: 100 * c[k] / n
            print(f"| {strategy} | {'as run' if t is None else t} | {n} | {pct('correct'):.1f} | {pct('hallucinated'):.1f} | "
                  f"{pct('missing'):.1f} | {pct('correct') - pct('hallucinated'):+.1f} | {len(out)} | {prec:.2f} | {rec:.2f} |")


if __name__ == "__main__":
    main()
