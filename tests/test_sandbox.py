"""The sandbox itself: what a job can see and do (files, network, environment, other jobs)."""

from __future__ import annotations

import os
import sys

import pytest

from graders.boundary.protocol import Cell, Job, Limits
from graders.grader.sandbox.worker import Worker, isolation_warning, job_env
from graders.inside.job import SAFE_ENVIRONMENT
from tests.conftest import ROOT
from tests.test_grade_attacks import ATTACKS

pytestmark = [
    pytest.mark.grading,
    pytest.mark.usefixtures("bwrap"),
]

TRUSTED_MODULES = [
    "graders.grader.vetting",
    "graders.pipeline",
    "graders.nbgrader.exchange",
    "graders.check.cuts",
]
SANDBOX_MODULES = ["graders.inside.rules", "graders.boundary.wire"]
PROBE = "from graders.inside.probing import probe\n@probe('evidence')\ndef evidence(ns, draw):\n    '''evidence'''\n    return ns['evidence']\n"
SPY = """
import os, socket
evidence = {}
def attempt(name, action):
    try:
        action()
        evidence[name] = "succeeded"
    except Exception as err:
        evidence[name] = type(err).__name__
for name, path in TARGETS.items():
    attempt("read " + name, lambda p=path: open(p, "rb").read(1))
attempt("write outside /tmp", lambda: open("/work/planted.py", "w").write("x"))
import importlib
for module in GRADER_MODULES:
    attempt("import " + module, lambda m=module: importlib.import_module(m))
attempt("network", lambda: socket.create_connection(("1.1.1.1", 53), timeout=3))
attempt("dns", lambda: socket.getaddrinfo("pypi.org", 443))
evidence["env"] = sorted(os.environ)
evidence["uid"] = os.getuid()
evidence["caps"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
evidence["pids"] = len([p for p in os.listdir("/proc") if p.isdigit()])
evidence["planted earlier"] = os.path.exists("/tmp/marker") or os.path.exists("/dev/shm/marker")
open("/tmp/marker", "w").write("from the previous job")
open("/dev/shm/marker", "w").write("from the previous job")
"""


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """Two jobs, one after the other in one worker, reporting what they could do."""
    tmp = tmp_path_factory.mktemp("sandbox")
    secret = tmp / "other_student" / "lab.ipynb"
    secret.parent.mkdir()
    secret.write_text("{}")
    (tmp / "gradebook.db").write_text("db")
    os.chmod(tmp, 0o755)
    targets = {
        "course source": str(ROOT / "course" / "01_autograd" / "lab_autograd.ipynb"),
        "gradebook": str(tmp / "gradebook.db"),
        "other submission": str(secret),
        "probe files": str(ROOT / "course" / "02_tensors" / "probes" / "lab_tensors.py"),
        "grader code": str(ROOT / "graders" / "grader" / "vetting.py"),
    }
    worker = Worker(0, Limits(wall_seconds=120), threads=1, log=tmp / "worker.log")
    worker.start()
    try:
        spy = f"TARGETS = {targets!r}\nGRADER_MODULES = {TRUSTED_MODULES + SANDBOX_MODULES!r}\n{SPY}"
        job = Job([Cell("spy", spy)], PROBE, "spy.py", salt=1)
        outcomes = [worker.run(job), worker.run(job)]
    finally:
        worker.close()
    assert all(o.status == "ok" for o in outcomes), [(o.status, o.output_tail) for o in outcomes]
    return [{**o.result.probes["evidence"].value, "isolation": o.isolation} for o in outcomes]


@pytest.mark.parametrize(
    "target", ["course source", "gradebook", "other submission", "probe files", "grader code"]
)
def test_cannot_read_grader_files(evidence: list[dict], target: str) -> None:
    assert evidence[0][f"read {target}"] in {"FileNotFoundError", "PermissionError"}


def test_the_trusted_grader_is_not_in_the_sandbox(evidence: list[dict]) -> None:
    """Of graders/, the sandbox holds only its own side and the boundary: a notebook cannot import (or read) the
    code that vets and scores it, the nbgrader adapters or the self-check."""
    for module in TRUSTED_MODULES:
        assert evidence[0][f"import {module}"] == "ModuleNotFoundError", module
    for module in SANDBOX_MODULES:
        assert evidence[0][f"import {module}"] == "succeeded", module


def test_no_network_and_no_writes_outside_tmp(evidence: list[dict]) -> None:
    assert evidence[0]["network"] != "succeeded" and evidence[0]["dns"] != "succeeded"
    assert evidence[0]["write outside /tmp"] != "succeeded"


def test_environment_reveals_nothing(evidence: list[dict]) -> None:
    assert evidence[0]["env"] == sorted(
        {*job_env(1), *SAFE_ENVIRONMENT}
    )  # the job's own safety settings only


def test_unprivileged_and_alone(evidence: list[dict]) -> None:
    assert evidence[0]["caps"] == "0000000000000000"
    if os.getuid() == 0:
        assert evidence[0]["uid"] != 0
    assert evidence[0]["pids"] <= 4  # the sandbox's pid namespace (bwrap, zygote, supervisor, job); no grader


def test_jobs_do_not_see_each_other(evidence: list[dict]) -> None:
    assert evidence[0]["planted earlier"] is False
    assert evidence[1]["planted earlier"] is False


def test_every_isolation_layer_active(evidence: list[dict]) -> None:
    notes = evidence[0]["isolation"]
    assert not [n for n in notes if n.startswith("NOT ACTIVE")], notes
    assert isolation_warning(True) is None
    assert "WARNING" in isolation_warning(False)


HOLD = ATTACKS["memory-together"].replace("mib=700", "mib=600") + "evidence = HELD\n"
BURN = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        while True:
            pass
time.sleep(30)
evidence = "not stopped"
"""


def _run_alone(tmp_path, code: str, limits: Limits, warm: tuple[str, ...] = ()):
    worker = Worker(0, limits, threads=1, log=tmp_path / "worker.log", warm=warm)
    try:
        outcome = worker.run(Job([Cell("c", code)], PROBE, "spy.py", salt=1))
        return worker.limit_note, outcome
    finally:
        worker.close()


@pytest.mark.parametrize("kernel", [True, False], ids=["cgroup", "watchdog"])
def test_memory_limit_holds_for_all_of_a_jobs_processes(
    tmp_path, monkeypatch: pytest.MonkeyPatch, kernel: bool
) -> None:
    """Three children of 600 MiB each under a 1024 MiB limit: never all three at once."""
    monkeypatch.setenv("LABS_CGROUPS", "1" if kernel else "0")
    note, outcome = _run_alone(tmp_path, HOLD, Limits(wall_seconds=60, memory_bytes=1024 << 20))
    if kernel and note.startswith("NOT ACTIVE"):
        pytest.skip(f"no writable cgroup on this machine: {note}")
    held = outcome.result.probes["evidence"].value if outcome.result else None
    assert held is not True, (outcome.status, outcome.result)
    assert outcome.status == ("ok" if kernel else "memory limit"), outcome.status


@pytest.mark.parametrize("kernel", [True, False], ids=["cgroup", "watchdog"])
def test_cpu_limit_is_summed_over_a_jobs_processes(
    tmp_path, monkeypatch: pytest.MonkeyPatch, kernel: bool
) -> None:
    """Three busy children and a 3 s CPU budget: stopped once they used 3 s together, not 3 s each."""
    monkeypatch.setenv("LABS_CGROUPS", "1" if kernel else "0")
    note, outcome = _run_alone(tmp_path, BURN, Limits(wall_seconds=60, cpu_seconds=3))
    if kernel and note.startswith("NOT ACTIVE"):
        pytest.skip(f"no writable cgroup on this machine: {note}")
    assert outcome.status == "cpu limit", (outcome.status, outcome.seconds)


def test_a_closed_worker_leaves_no_cgroup_behind(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """close() waits for the killed sandbox's processes to leave its groups, then deletes them."""
    monkeypatch.setenv("LABS_CGROUPS", "1")
    worker = Worker(0, Limits(wall_seconds=60), threads=1, log=tmp_path / "worker.log")
    worker.start()
    group = worker.group
    if group is None:
        worker.close()
        pytest.skip(f"no writable cgroup on this machine: {worker.limit_note}")
    outcome = worker.run(
        Job(
            [Cell("c", "import os\nfor _ in range(2):\n    os.fork() or os.pause()\nevidence = 1\n")],
            PROBE,
            "spy.py",
            salt=1,
        )
    )
    worker.close()
    assert outcome.status == "ok", outcome.status
    assert [d for d in group.dirs.values() if d.exists()] == []


RANKS = """
import torch
import torch.distributed as dist
import labutils.launch.launcher
from labutils.launch import launch

polled = []
fork_rank = labutils.launch.launcher.fork_rank
factory = labutils.launch.zygote._Factory.zygote  # forked by the job before this cell, when warm


def fork_and_poll(*args, **kwargs):
    rank = fork_rank(*args, **kwargs)
    polled.append(rank.poll())
    return rank


labutils.launch.launcher.fork_rank = fork_and_poll


def rank_sum(x):
    y = x * (dist.get_rank() + 1)
    dist.all_reduce(y)
    return y


sums = [launch(rank_sum, world, torch.ones(2), timeout=90)[-1].tolist() for world in (2, 3, 4, 4, 3, 2, 4, 3)]
evidence = {"sums": sums, "polled": polled, "factory": type(factory.proc).__name__ if factory else None}
"""


def test_ranks_launched_in_a_job_all_report_their_exit(tmp_path) -> None:
    """Eight launches of 2-4 ranks inside one job: every rank's result arrives (none reported vanished),
    whether the ranks' zygote starts cold (python -m zygote.server) or is forked by the job.

    The job's pid namespace cannot always mount its own /proc (not under a container's masked one),
    so /proc numbers other processes; the launcher must not look ranks up there.
    """
    for warm, factory in (((), None), (("labutils.launch",), "ServerProcess")):
        _, outcome = _run_alone(tmp_path, RANKS, Limits(wall_seconds=240, processes=256), warm)
        assert outcome.status == "ok", (outcome.status, outcome.output_tail)
        evidence = outcome.result.probes["evidence"].value
        assert evidence["sums"] == [[w * (w + 1) / 2] * 2 for w in (2, 3, 4, 4, 3, 2, 4, 3)], evidence
        assert -9 not in evidence["polled"], evidence[
            "polled"
        ]  # polled at once: running (None), never "vanished"
        # a lab that imports labutils.launch: its job forks the ranks' zygote from itself, before any cell
        assert evidence["factory"] == factory, (warm, evidence["factory"])


ONNX_EXPORT = """
import torch, tqdm
from labutils.deploy import quiet_onnx_export
with quiet_onnx_export():
    program = torch.onnx.export(torch.nn.Linear(3, 2).eval(), (torch.ones(1, 3),), dynamo=True, verbose=False)
evidence = {"exported": type(program).__name__, "tqdm monitor interval": tqdm.tqdm.monitor_interval}
"""


def test_a_zygote_warmed_by_an_onnx_export_still_forks_its_jobs(tmp_path) -> None:
    """Labs that call torch.onnx.export get one export in the zygote (its first costs 3-4 s); it leaves no
    thread behind (tqdm's monitor stays off), so jobs are still forked, and export."""
    _, outcome = _run_alone(tmp_path, ONNX_EXPORT, Limits(wall_seconds=120), ("torch.onnx",))
    assert outcome.status == "ok", (outcome.status, outcome.output_tail)
    assert outcome.result.probes["evidence"].value == {"exported": "ONNXProgram", "tqdm monitor interval": 0}


def test_without_bubblewrap_a_job_never_runs_as_the_grader_when_its_uid_cannot(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    """labs grade asked for a sandbox: if bwrap is missing and the job's uid could not read Python, the job
    does not run (as the grader's uid it could read the gradebook); labs check --no-sandbox may go on."""
    import graders.grader.sandbox.worker as worker_module
    from graders.inside import jail

    if os.getuid() != 0 or not jail.unreadable_ancestor(sys.base_prefix):
        pytest.skip(
            "only where the grader is root and Python sits in a private folder (this VM: /root/.pyenv)"
        )
    monkeypatch.setattr(worker_module.shutil, "which", lambda name: None)  # as on a machine without bwrap
    job = Job(
        [Cell("c", "import os\nevidence = os.getuid()\n")],
        "from graders.inside.probing import probe\n"
        "@probe('evidence')\ndef e(ns, draw):\n    return ns['evidence']\n",
        "spy.py",
        salt=1,
    )
    for requested, runs in ((True, False), (False, True)):
        worker = Worker(
            0, Limits(wall_seconds=60), threads=1, use_bwrap=requested, log=tmp_path / f"w{requested}.log"
        )
        try:
            outcome = worker.run(job)
        finally:
            worker.close()
        assert (outcome.status == "ok") is runs, (requested, outcome.status, outcome.isolation)


def test_a_supervisor_that_never_answers_costs_the_grader_its_wall_limit_not_forever(tmp_path, monkeypatch):
    """The supervisor inside the sandbox is stopped mid-job (as if it hung or died): the grader's own
    ceiling ends the job as a timeout, and the next job gets a fresh sandbox."""
    import signal
    import threading
    import time

    import psutil

    from graders.grader.sandbox import watchdog

    monkeypatch.setattr(watchdog, "WALL_GRACE", 1.0)
    worker = Worker(0, Limits(wall_seconds=5), threads=1, log=tmp_path / "worker.log")
    worker.start()
    stopped: list[int] = []

    def stop_the_supervisor() -> None:
        """Stop the supervisor while its job runs (one with a job process), never an idle next one."""
        for _ in range(200):
            running = [p for p in psutil.Process(worker.zygote).children() if p.children()]
            if running:
                running[0].send_signal(signal.SIGSTOP)
                stopped.append(running[0].pid)
                return
            time.sleep(0.02)

    try:
        spy = threading.Thread(target=stop_the_supervisor)
        spy.start()
        outcomes = []
        grading = threading.Thread(
            target=lambda: outcomes.append(
                worker.run(
                    Job([Cell("c", "import time\ntime.sleep(60)\nevidence = 1\n")], PROBE, "spy.py", salt=1)
                )
            )
        )
        grading.start()
        grading.join(30)
        spy.join()
        if not outcomes:
            worker.proc.kill()  # what the grader should have done itself
            grading.join()
            pytest.fail("the grader still waited for the stopped supervisor after 30 s")
        assert stopped, "no supervisor appeared"
        assert outcomes[0].status == "timeout", outcomes[0].status
        after = worker.run(Job([Cell("c", "evidence = 2\n")], PROBE, "spy.py", salt=1))
        assert after.status == "ok" and after.result.probes["evidence"].value == 2, after.status
    finally:
        worker.close()
