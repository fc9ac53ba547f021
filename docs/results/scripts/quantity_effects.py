#!/usr/bin/env python3
"""What the quantity check (measure node) did on a run record: `check_effects.py --check
quantity` (kept under this name for the links in monitor.md).

    python3 docs/results/scripts/quantity_effects.py RUN.json|RUN.jsonl
"""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from check_effects import main  # noqa: E402

main(sys.argv[1], "quantity")
