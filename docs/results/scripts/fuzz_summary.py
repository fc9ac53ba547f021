"""Fuzzing time per target, summed over every run in the record.

    python3 docs/results/scripts/fuzz_summary.py [docs/results/fuzz-runs.jsonl]

`scripts/fuzz.sh` appends one line per target and run; the corpus it grows is kept between
runs (in the cache), so runs add up to one campaign per target. Prints a Markdown table:
runs, CPU-hours (libFuzzer runs one process per target, one core each), executions, the
latest corpus size, crashes and non-zero exits, per target and in all.
"""
import collections
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "docs/results/fuzz-runs.jsonl"
runs = [json.loads(line) for line in open(path) if line.strip()]
by = collections.OrderedDict()
for r in runs:
    t = by.setdefault(
        r["target"],
        {"runs": 0, "seconds": 0, "executions": 0, "corpus": 0, "crashes": 0, "failed": 0},
    )
    t["runs"] += 1
    t["seconds"] += r["seconds"]
    t["executions"] += r["executions"]
    t["corpus"] = r["corpus"]
    t["crashes"] += r["crashes"]
    t["failed"] += r["exit"] != 0

print("| target | runs | CPU-hours | executions | corpus (latest) | crashes | failed runs |")
print("|---|---:|---:|---:|---:|---:|---:|")
for name, t in by.items():
    print(
        f"| `{name}` | {t['runs']} | {t['seconds'] / 3600:.2f} | {t['executions']:,} "
        f"| {t['corpus']:,} | {t['crashes']} | {t['failed']} |"
    )
total = {k: sum(t[k] for t in by.values()) for k in ("runs", "seconds", "executions", "crashes", "failed")}
print(
    f"| all | {total['runs']} | {total['seconds'] / 3600:.2f} | {total['executions']:,} "
    f"| | {total['crashes']} | {total['failed']} |"
)
