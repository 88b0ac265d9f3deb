"""Run every benchmark (tests/bench/bench_*.py) and print each target as a ratio against a
baseline measured in the same run. ``python tests/bench/run_all.py [NAME ...]`` runs a subset.

Each bench module exposes ``run() -> list[dict]`` where a dict has ``name``, ``value``,
``baseline``, ``unit``, ``target`` (the ratio not to exceed) and a ``note``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))


def main(names: list[str]) -> int:
    modules = sorted(p.stem for p in HERE.glob("bench_*.py"))
    if names:
        modules = [m for m in modules if any(n in m for n in names)]
    failed = 0
    print(f"{'benchmark':58} {'value':>10} {'baseline':>10} {'ratio':>7} {'target':>7}")
    for name in modules:
        module = importlib.import_module(f"tests.bench.{name}")
        for row in module.run():
            ratio = row["value"] / row["baseline"] if row.get("baseline") else float("nan")
            target = row.get("target")
            ok = target is None or ratio <= target
            failed += not ok
            print(f"{row['name'][:58]:58} {row['value']:>9.3f}{row['unit'][:1]} {row['baseline']:>9.3f}{row['unit'][:1]}"
                  f" {ratio:>6.2f}x {('<=' + format(target, 'g') + 'x') if target else '':>7} {'' if ok else 'MISSED'}")
            if row.get("note"):
                print(f"    {row['note']}")
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
