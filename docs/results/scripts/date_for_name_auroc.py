#!/usr/bin/env python3
"""The monitor's AUROC on a run record, before and after a date answering a question that
never mentions time counts as the wrong form (`AnswerForm::Name`, 2026-11-27).

The rule only turns `type_match` false, whose hand-set weight is w(0.6, 0.9, 0.3): the
logit falls by 0.6 / 0.3 = 2.0. The confidence is recomputed from the recorded one, so no
model is called.

    python3 docs/results/scripts/date_for_name_auroc.py RUN.json|RUN.jsonl [...]
"""
import math, re, sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from monitor_candidates import load, first_right, auroc, half  # noqa: E402

MONTHS = set("january february march april may june july august september october november december "
             "jan feb mar apr jun jul aug sep sept oct nov dec".split())
DATE_WORDS = set("bc bce ad ce c ca circa early late mid century".split())
TIME = set("when year years date dates day days month century centuries decade age old long time period era season".split())


def toks(t):
    return re.findall(r"[a-z0-9]+", t.lower())


def asks_about_time(q):
    t = toks(q)
    return any(w in TIME for w in t) or any(a in ("born", "died") and b == "on" for a, b in zip(t, t[1:]))


def is_date_phrase(a):
    t = toks(a)
    if re.search(r"\d[,.]\d", a):  # "8,515", "1.5": numbers, never dates
        return False
    year = lambda w: w.isdigit() and 3 <= len(w) <= 4
    ordinal = lambda w: re.fullmatch(r"\d+(st|nd|rd|th|s)?", w) is not None
    return bool(t) and any(w in MONTHS or year(w) for w in t) and all(
        ordinal(w) or w in MONTHS or w in DATE_WORDS for w in t)


def asks_number_or_yes_no(q):
    ql = q.strip().lower()
    return bool(re.search(r"\bhow (many|much|old|long)\b", ql)) or bool(
        re.match(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall|may|might)\b", ql))


def logit(p):
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


for path in sys.argv[1:]:
    rs = [r for r in load(path) if r["strategy"] == "metarag"]
    before, after, hits = [], [], []
    for r in rs:
        r0 = r["trace"]["rounds"][0]
        a = r0.get("assessment")
        if not a:
            continue
        c, y, short = a["confidence"], first_right(r), r0["short_answer"]
        before.append((c, y))
        q = r["question"]
        flagged = (a["signals"].get("type_match", True) and not asks_about_time(q)
                   and not asks_number_or_yes_no(q) and " or " not in q and is_date_phrase(short))
        if flagged:
            hits.append((y, short, q))
            c = 1 / (1 + math.exp(-(logit(c) - 2.0)))
        after.append((c, y))
    halves = {half(r["id"]) for r in rs}
    print(f"{path}\n  halves {sorted(halves)}, {len(before)} first answers: AUROC {auroc(before):.3f} -> {auroc(after):.3f}; "
          f"{len(hits)} dates for a name, {sum(h[0] for h in hits)} right")
    for h in hits:
        print("   ", h)
