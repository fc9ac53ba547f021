"""What declining a bare yes/no whose question program did not resolve would change, read
off recorded metarag traces (no model calls): the kept answers that are a bare yes or no
after an unresolved program and were not already declined, by whether each is right,
wrong, or an answer to a question with no answer, and the CRAG counts (correct +1,
declined 0, hallucinated -1) that declining them moves. Used for truthfulness.md
("A yes/no the program did not settle").

    python3 docs/results/scripts/unsettled_yes_no.py RUN.jsonl [RUN.jsonl ...]
"""
import json
import re
import sys


def verdict(answer):
    words = re.split(r"\W+", answer.strip().lower())
    return words[0] if words and words[0] in ("yes", "no") and len(words) <= 2 else None


def main():
    right = wrong = none = 0
    for path in sys.argv[1:]:
        rows = [json.loads(l) for l in open(path).read().splitlines()[1:] if l.strip()]
        for r in rows:
            if r.get("strategy") != "metarag" or r["trace"].get("abstained"):
                continue
            records = r["trace"].get("records") or {}
            outcome = ((records.get("program") or {}).get("outcome") or {}).get("outcome")
            v = verdict(r["prediction"])
            if outcome != "unresolved" or v is None:
                continue
            gold = [g.lower() for g in r["answers"]]
            kind = "right" if v in gold else ("no answer" if not gold else "wrong")
            right += kind == "right"
            wrong += kind == "wrong"
            none += kind == "no answer"
            print(f"{kind:9} {v:3}  {r['question'][:100]}")
    n = right + wrong + none
    print(f"\n{n} unsettled yes/no answers: {right} right, {wrong} wrong, {none} with no answer")
    print(f"declining them: correct -{right}, hallucinated -{wrong + none}, "
          f"truthfulness {wrong + none - right:+d} (in answers)")


if __name__ == "__main__":
    main()
