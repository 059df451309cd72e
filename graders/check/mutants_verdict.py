"""What a mutant's run means: killed, survived or stillborn (and the limits it runs under).

A mutant is *killed* when its exercise loses points (a run that hits the time or CPU limit included:
the mistake never finishes), *survived* when it earns them all, and *stillborn* when it does not
compile, the vetting refuses it, or its sandbox ends without a result (crashed, out of memory): killed,
but not by a probe. This module is one of the files the results' hashes cover
(:func:`graders.check.mutants_ledger.verdict_files`): a change here makes every committed verdict stale.
"""

from __future__ import annotations

from graders.boundary.protocol import Limits
from graders.check.mutants import Mutant
from graders.grader.results import NotebookGrade
from graders.grader.vetting import vet

# A reference job of labs 01 and 02 takes 1-3 CPU-s: a mutant that loops forever ends at 20.
LIMITS = Limits(wall_seconds=60, cpu_seconds=20, memory_bytes=2 << 30)
STILLBORN = ("crashed", "memory limit", "worker died", "bad result", "output limit", "result too large")
KILLED_BY_LIMITS = ("timeout", "cpu limit")
#: A mutant is killed only when it loses points under each of this many fresh salts (one reference run
#: each): probes strong enough that the draw does not matter. A survivor, a stillborn mutant and one
#: that ran out of time or CPU are known after the first salt (their runs do not depend on the draws).
SALTS = 3


def before_running(mutant: Mutant, modules: frozenset[str]) -> dict | None:
    """The verdict of a mutant that never needs a sandbox: it does not compile, or the vetting refuses it."""
    try:
        compile(mutant.source, f"<{mutant.id}>", "exec")
    except (SyntaxError, ValueError) as err:
        return {"verdict": "stillborn", "note": f"does not compile: {err}"[:200]}
    findings = vet(mutant.source, modules)
    return (
        {"verdict": "stillborn", "note": f"refused by the vetting: {findings[0]}"[:200]} if findings else None
    )


def verdict_of(graded: NotebookGrade) -> dict | None:
    """killed, survived or stillborn, from a graded run of one exercise under one salt; None when the grader
    failed."""
    if graded.status == "grader error":
        return None
    if graded.status in STILLBORN:
        return {"verdict": "stillborn", "note": graded.status}
    if graded.score < graded.max_score:
        return {"verdict": "killed", **({"note": graded.status} if graded.status in KILLED_BY_LIMITS else {})}
    return {"verdict": "survived"}


def needs_another_salt(verdict: dict) -> bool:
    """Whether a verdict under one salt may change under another: a kill by the probes' comparison may."""
    return verdict["verdict"] == "killed" and "note" not in verdict


def verdict_over_salts(verdicts: list[dict]) -> dict:
    """The verdict of a mutant from its runs under successive salts (the last one decides: the runs stop at
    the first that needs no other salt), saying under how many salts a kill held."""
    last = verdicts[-1]
    if len(verdicts) > 1 and last["verdict"] == "survived":
        return {
            "verdict": "survived",
            "note": f"killed under {len(verdicts) - 1} salt(s), survived salt {len(verdicts)}",
        }
    return last
