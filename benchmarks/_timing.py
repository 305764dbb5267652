"""Timing shared by the benchmarks: every entry timed in rounds, each entry's best round.

Each round times every call once, one after another, so slow spells of a
shared machine hit rounds, not calls; the empty lambda's own cost is taken
off every figure.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

Timed = dict[str, tuple[Callable[[], object], int]]  # name -> (call, calls per round)


def best_ns(timed: Timed, rounds: int) -> dict[str, float]:
    """ns per call of each entry: its best round, minus the timing lambda's own cost."""
    best = dict.fromkeys([*timed, "empty"], float("inf"))
    entries = {**timed, "empty": ((lambda: None), 20_000)}
    for _ in range(rounds):
        for name, (fn, number) in entries.items():
            best[name] = min(best[name], timeit.timeit(fn, number=number) / number * 1e9)
    empty = best.pop("empty")
    return {name: value - empty for name, value in best.items()}
