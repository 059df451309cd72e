"""Run `make test`'s stages in lanes: the stages of one lane one after another, the lanes side by side.

    python ci/lanes.py grading,unit notebooks,site typecheck,browser --background notebooks,site

Each stage is a make target; its output goes to build/logs/<stage>.log, and one line per stage says when
it passed or failed and how long it took. A lane stops at its first failed stage (later stages may need
what it makes); the other lanes go on. At the end the log of every failed stage is printed whole, then a
summary table; the exit status is 1 when any stage failed. ``--background`` stages run at a lower CPU
priority (``nice -n 10``): where the lanes want more than the machine's cores, the others go first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

Lane = list[str]
NICE = ("nice", "-n", "10")


@dataclass(frozen=True)
class StageResult:
    """How one stage ended: ``passed``, ``failed`` or ``not run`` (an earlier stage of its lane failed)."""

    stage: str
    status: str
    seconds: float
    log: Path
    cpu_seconds: float = 0.0


def parse_lanes(arguments: list[str]) -> list[Lane]:
    """``["a,b", "c"]`` -> ``[["a", "b"], ["c"]]``; no stage at all, or a stage named twice, is an error."""
    lanes = [lane for argument in arguments if (lane := [stage for stage in argument.split(",") if stage])]
    stages = [stage for lane in lanes for stage in lane]
    repeated = sorted({stage for stage in stages if stages.count(stage) > 1})
    if not stages:
        raise ValueError("no stages given")
    if repeated:
        raise ValueError(f"a stage runs once: {', '.join(repeated)} named twice")
    return lanes


def minutes(seconds: float) -> str:
    """``75.4`` -> ``'1 min 15 s'``."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where this machine has it


def cpu_group(stage: str) -> Path | None:
    """A fresh cpuacct group for one stage (v1 only; its processes' CPU time, those never waited for included)."""
    group = CPUACCT / f"labs-lanes-{os.getpid()}" / stage
    try:
        group.mkdir(parents=True)
    except OSError:
        return None
    return group


def group_cpu_seconds(group: Path, settle: float = 5.0) -> tuple[float, int]:
    """The group's CPU time and how many of its processes still run ``settle`` s after the stage ended
    (those exiting on their own, a kernel zygote after its client, are waited for); an empty group is removed."""
    deadline = time.monotonic() + settle
    while (left := len((group / "cgroup.procs").read_text().split())) and time.monotonic() < deadline:
        time.sleep(0.1)
    seconds = int((group / "cpuacct.usage").read_text()) / 1e9
    for folder in (group, group.parent):
        try:
            folder.rmdir()
        except OSError:  # processes left in it, or the lanes' folder still holds another stage's group
            pass
    return seconds, left


def run_stage(stage: str, make: list[str], logs: Path, say) -> StageResult:
    """``make STAGE`` (``make``: the command, ``nice`` included for a background stage), output in ``logs/STAGE.log``.

    The CPU time is every process of the stage's where cgroup v1's cpuacct is writable (as root); elsewhere
    that of the processes it waited for (a sandbox killed whole is not among them).
    """
    log = logs / f"{stage}.log"
    say(f"lanes: {stage} started (log: {log})")
    group = cpu_group(stage)
    command = [*make, stage]
    if group is not None:  # the shell joins the group, then becomes make: every later process is inside
        command = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs"), *command]
    start = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)  # wait4: the rusage of what make waited for, too
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    seconds = time.monotonic() - start
    cpu, left = group_cpu_seconds(group) if group is not None else (usage.ru_utime + usage.ru_stime, 0)
    if left:
        say(f"lanes: {stage} left {left} processes running after it ended (cgroup {group})")
    result = StageResult(stage, "passed" if child.returncode == 0 else "failed", seconds, log, cpu)
    say(f"lanes: {stage} {result.status} in {minutes(result.seconds)} ({result.cpu_seconds:.0f} CPU-s)")
    return result


def run_lane(
    lane: Lane, make: list[str], logs: Path, say, background: frozenset[str] = frozenset()
) -> list[StageResult]:
    """The lane's stages in order, up to and including the first that fails."""
    results: list[StageResult] = []
    for stage in lane:
        if results and results[-1].status != "passed":
            results.append(StageResult(stage, "not run", 0.0, logs / f"{stage}.log"))
        else:
            command = [*NICE, *make] if stage in background else make
            results.append(run_stage(stage, command, logs, say))
    return results


def summary(results: list[StageResult], wall: float) -> str:
    """One line per stage, then the total wall time."""
    width = max(len(r.stage) for r in results)
    lines = [
        f"  {r.stage:<{width}}  {r.status:<7}  "
        + (f"{minutes(r.seconds)}  {r.cpu_seconds:.0f} CPU-s" if r.status != "not run" else "-")
        for r in results
    ]
    failed = [r.stage for r in results if r.status != "passed"]
    verdict = f"failed: {', '.join(failed)}" if failed else "all passed"
    cpu = sum(r.cpu_seconds for r in results)
    return "\n".join(
        ["lanes: summary", *lines, f"lanes: {verdict} in {minutes(wall)} (wall), {cpu:.0f} CPU-s"]
    )


def main(argv: list[str] | None = None) -> int:
    """Run the lanes; 0 when every stage passed, 1 otherwise, 2 on bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lanes", nargs="+", help="comma-separated make targets, one argument per lane")
    parser.add_argument("--logs", type=Path, default=Path("build/logs"), help="where each stage's log goes")
    parser.add_argument("--make", default="make", help="the make program (a Makefile folder: -C DIR)")
    parser.add_argument(
        "--background", default="", help="comma-separated stages to run at a lower CPU priority"
    )
    args = parser.parse_args(argv)
    try:
        lanes = parse_lanes(args.lanes)
        background = frozenset(
            filter(None, args.background.split(","))
        )  # a stage no lane runs: nothing to do
    except ValueError as err:
        print(f"lanes: error: {err}", file=sys.stderr)
        return 2
    args.logs.mkdir(parents=True, exist_ok=True)
    make = [*args.make.split(), "--no-print-directory"]
    printing = threading.Lock()

    def say(line: str) -> None:
        with printing:
            print(line, flush=True)

    start = time.monotonic()
    with ThreadPoolExecutor(len(lanes)) as pool:
        per_lane = list(pool.map(lambda lane: run_lane(lane, make, args.logs, say, background), lanes))
    results = [result for lane in per_lane for result in lane]
    for failed in (r for r in results if r.status == "failed"):
        print(f"\n===== {failed.stage} failed: {failed.log} =====", flush=True)
        sys.stdout.write(failed.log.read_text(encoding="utf-8", errors="replace"))
    print(summary(results, time.monotonic() - start), flush=True)
    return 0 if all(r.status == "passed" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
