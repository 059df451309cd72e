"""Structured draws for probes: inputs with structure (graphs, fault lists, layouts, parameter groups) drawn
by Hypothesis strategies, as a fixed list of examples that depends on the grading run's salt only.

A probe that draws such inputs by hand tends to draw one family (only chains, one group, one fault at a
time). A strategy describes the whole space, and Hypothesis's generator favours its boundaries (the
smallest example first, empty and repeated choices, extreme integers), so one family cannot be all a
probe sees. Grading needs what property testing does not: the reference run and every student's run of
one salt must see the same examples, and nothing the student's code does may change them, so:

- examples come from the ``generate`` phase only (no shrinking, no database, no explicit examples), with
  Hypothesis's random seeded from the probe's :class:`~graders.inside.probing.Draw`;
- Hypothesis's "local constants" (literals it collects from the source of modules loaded at the time, to
  try as inputs) are switched off: which modules are loaded differs between a reference and a student's
  run, and would make the draws differ.

    from hypothesis import strategies as st
    from graders.inside.draws import examples
    groups = examples(draw, st.lists(st.integers(1, 4), min_size=1, max_size=3), count=8)
"""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.internal.conjecture import providers
from hypothesis.strategies import SearchStrategy

from graders.inside.probing import Draw

T = TypeVar("T")


def _no_local_constants() -> providers.Constants:
    """What Hypothesis would otherwise collect from the loaded modules' source: here always nothing."""
    return providers.Constants(
        integers=providers.SortedSet(),
        floats=providers.SortedSet(key=providers.float_to_int),
        bytes=providers.SortedSet(),
        strings=providers.SortedSet(),
    )


providers._get_local_constants = _no_local_constants


def examples(draw: Draw, strategy: SearchStrategy[T], count: int) -> list[T]:
    """Up to ``count`` examples of ``strategy``, the same for every run of this draw's salt and probe
    (fewer only when the strategy has fewer distinct examples)."""
    found: list[T] = []

    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        derandomize=False,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
        report_multiple_bugs=False,
    )
    @seed(draw.seed)
    @given(strategy)
    def collect(example: T) -> None:
        found.append(example)

    collect()
    return found
