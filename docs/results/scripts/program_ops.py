"""Question-program validity and per-op accuracy from bench records (no model calls), for
issue 67's "program validity and per-op accuracy on the tuning half" (program.md).

Per file (metarag runs only): how many programs parsed and typed (not `invalid`), ran to
the end with every step grounded (`resolved`), stopped at a step (`unresolved`), or were one
plain read left to the write (`skipped`). Per op: how many steps of that op ran, and how
many grounded (find/follow: a quote code found in a source, stating the value) or
computed (compare, same, all/any, pick, count, intersect: in code); where a step stopped
the program, the op it stopped at. Per answering op (the last step of a resolved
program): how often that answer is right (EM, Sub-EM, or F1 >= 0.5 against the gold
answers; questions with no gold answer left out).

    python3 docs/results/scripts/program_ops.py RUN.jsonl [RUN.jsonl ...]
"""
import collections
import json
import re
import sys


def op_name(op):
    return re.match(r"\s*([a-z_]+)", op or "").group(1) if op else "?"


def right(r):
    s = r["scores"]
    return s["em"] >= 1 or s.get("sub_em", 0) >= 1 or s["f1"] >= 0.5


def main():
    for path in sys.argv[1:]:
        rows = [json.loads(l) for l in open(path).read().splitlines()[1:] if l.strip()]
        outcomes = collections.Counter()
        ran = collections.Counter()
        held = collections.Counter()
        stopped = collections.Counter()
        answers = collections.defaultdict(lambda: [0, 0])
        n = 0
        for r in rows:
            if r.get("strategy") != "metarag":
                continue
            n += 1
            p = ((r.get("trace") or {}).get("records") or {}).get("program")
            if not p:
                outcomes["none"] += 1
                continue
            o = (p.get("outcome") or {}).get("outcome", "none")
            outcomes[o] += 1
            for st in p.get("steps") or []:
                name = op_name(st.get("op"))
                ran[name] += 1
                held[name] += st.get("status") in ("grounded", "computed")
            if o == "unresolved":
                stopped[(p["outcome"].get("op") or "?")] += 1
            if o == "resolved" and r["answers"] and p.get("steps"):
                last = op_name(p["steps"][-1].get("op"))
                answers[last][0] += 1
                answers[last][1] += right(r)
        print(f"## {path}\n")
        print(f"{n} metarag runs: " + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
        valid = n - outcomes["invalid"] - outcomes["none"]
        print(f"valid (parsed and typed) {valid}/{n} = {100 * valid / max(n, 1):.0f}%, "
              f"every step grounded {outcomes['resolved']}/{n} = "
              f"{100 * outcomes['resolved'] / max(n, 1):.0f}%\n")
        print("| op | steps run | grounded or computed | stopped the program here | "
              "answers (resolved) | right |")
        print("|---|---|---|---|---|---|")
        for name in sorted(set(ran) | set(stopped) | set(answers)):
            a, ok = answers.get(name, (0, 0))
            acc = f"{ok} ({100 * ok / a:.0f}%)" if a else "-"
            print(f"| {name} | {ran[name]} | {held[name]} | {stopped[name]} | {a} | {acc} |")
        print()


if __name__ == "__main__":
    main()
