"""Timing shared by the benchmarks: every entry timed in rounds, each entry's best round.

Each round times every call once, one after another, so slow spells of a
shared machine hit rounds, not calls; the empty lambda's own cost is taken
off every figure.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

Timed = dict[str, tuple[Callable[[], object], int]]  # name -> (call, calls per round)


def best_ns(timed: Timed, rounds: int, *, alternate: bool = False) -> dict[str, float]:
    """ns per call of each entry: its best round, minus the timing lambda's own cost.

    ``alternate``: every other round runs the entries in reverse order. An entry
    timed right after another runs on caches that one left (warm for its own
    code when both share most of it): compare entries of near-equal cost so.
    """
    best = dict.fromkeys([*timed, "empty"], float("inf"))
    entries = {**timed, "empty": ((lambda: None), 20_000)}
    forward = list(entries.items())
    for round_ in range(rounds):
        for name, (fn, number) in forward[::-1] if alternate and round_ % 2 else forward:
            best[name] = min(best[name], timeit.timeit(fn, number=number) / number * 1e9)
    empty = best.pop("empty")
    return {name: value - empty for name, value in best.items()}
