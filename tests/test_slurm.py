"""A real Slurm cluster grades a class and executes the course (ci/slurm/grade.sbatch, ci/slurm/course.sbatch).

The cluster is ci/slurm.sh's (one node, 2 CPUs; `.ci/run` starts it as root and exports SLURM_CONF), the
gradebook a fresh database on ci/postgres.sh's server (LABS_TEST_POSTGRES_URL), dropped afterwards. These tests
run in their own stage, `make slurm` (marker slurm). Without a cluster they skip, saying how to start one, unless
the run has --require=slurm (.ci/run sets it), where that is a failure.

- A class of 200 generated submissions of the fixture lab (honest, blank, wrong, and attackers from
  tests/test_grade_attacks.py) graded by a 4-task array: one task is cancelled mid-run (`scancel JOB_2`) and
  resubmitted alone (`sbatch --array=2`). Every student is graded exactly once, by the task whose shard they are
  in, with the scores one `labs grade` on one machine gives the same class (a sqlite gradebook); `labs export`
  reads the one gradebook; each task's sandboxes nest in Slurm's cgroup and say so.
- The course array in smoke mode, on one chapter (CHAPTER below: the whole course twice would cost minutes of
  both cores), merged by `labs run-merge`: the same verdicts as `labs run CHAPTER --smoke` on one machine.

The cases at the end need no cluster (they run in `make unit`): the two scripts run by bash as a task would, with
`labs` stubbed (shards 1/N .. N/N, a retry alone keeping its shard, the device a GPU task gets, the merge), and
how the grader recognises Slurm's cgroup.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from graders.grader.sandbox.cgroups import scheduler_group
from tests.conftest import BIN, FIXTURES, ROOT, labs, labs_env
from tests.requires import POSTGRES_URL, unavailable
from tests.test_grade_attacks import ATTACKS, LAB, _attack

SERVER = POSTGRES_URL
STUDENTS = 200
TASKS = 4
KILLED = 2  # the array index cancelled mid-run and resubmitted alone
# Attacks that apply to the fixture lab and end at once (the spinning, sleeping and memory ones cost the
# --cpu/--timeout limits, and tests/test_grade_attacks.py meets them already).
ATTACKERS = ("always-equal", "patch-testing", "memorised", "os-exit", "sys-exit", "forge-result")
KINDS = ("honest", "honest", "blank", "wrong", "honest", *ATTACKERS)
EXPECTED = {"honest": 5.0, "blank": 0.0, "wrong": 3.0, **dict.fromkeys(ATTACKERS, 0.0)}
CHAPTER = "course/02_tensors"  # the course array's subset: the cheapest chapter in smoke mode (about 18 s)
WAIT = 600  # seconds for a whole array


def _unavailable(why: str) -> None:
    unavailable("slurm", f'{why} (as root: eval "$(ci/slurm.sh start)", then make slurm)')


def slurm(*args: str, check: bool = True) -> str:
    """A Slurm client command's stdout (SLURM_CONF from the environment)."""
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check and proc.returncode:
        raise AssertionError(f"{' '.join(args)}: {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


@pytest.fixture(scope="module")
def cluster() -> str:
    """The node's name, once sinfo shows it up; skips (or fails, --require=slurm) without one."""
    if not shutil.which("sinfo"):
        _unavailable("Slurm is not installed")
    proc = subprocess.run(
        ["sinfo", "-h", "-N", "-p", "cpu", "-o", "%N %T"], capture_output=True, text=True, timeout=30
    )
    if proc.returncode or not proc.stdout.strip():
        _unavailable(
            f"no Slurm cluster answers (SLURM_CONF={os.environ.get('SLURM_CONF', 'unset')}: "
            f"{proc.stderr.strip()[:200]})"
        )
    node, state = proc.stdout.split()[:2]
    assert state.rstrip("*") in {"idle", "mixed", "allocated"}, proc.stdout
    return node


@pytest.fixture(scope="module")
def gradebook() -> str:
    """A fresh PostgreSQL database for the class, dropped afterwards."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    engine = sqlalchemy.create_engine(SERVER, isolation_level="AUTOCOMMIT")
    name = f"labs_slurm_{secrets.token_hex(4)}"
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text(f"create database {name}"))
    except sqlalchemy.exc.OperationalError as err:
        unavailable(
            "postgres",
            f"no PostgreSQL server at {SERVER} (run ci/postgres.sh as root): {str(err).splitlines()[0]}",
        )
    yield SERVER.rsplit("/", 1)[0] + "/" + name
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f"drop database {name} with (force)"))
    engine.dispose()


def make_class(folder: Path, count: int = STUDENTS) -> dict[str, float]:
    """``count`` submissions of the fixture lab, kinds in turn; each student's expected total."""
    source = nbformat.read(LAB, as_version=4)
    blank = nbformat.read(LAB, as_version=4)
    for cell in blank.cells:
        if cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = "raise NotImplementedError()"
    wrong = nbformat.read(LAB, as_version=4)
    next(
        c for c in wrong.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "scale"
    ).source = "def scale(t, factor):\n    return t.mul_(factor)\n"
    notebooks = {
        "honest": source,
        "blank": blank,
        "wrong": wrong,
        **{name: _attack(ATTACKS[name]) for name in ATTACKERS},
    }
    expected = {}
    for k in range(count):
        kind = KINDS[k % len(KINDS)]
        student = f"s{k:03d}-{kind}"
        (folder / student / "fx_basic").mkdir(parents=True)
        nbformat.write(notebooks[kind], folder / student / "fx_basic" / "lab_basic.ipynb")
        expected[student] = EXPECTED[kind]
    return expected


def submit(script: str, array: str, env: dict[str, str], out: Path, *options: str) -> str:
    """``sbatch --array=ARRAY SCRIPT`` in ``env`` (the job's environment: --export=ALL); the job id."""
    proc = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--array={array}",
            "--chdir",
            str(ROOT),
            "--output",
            str(out),
            *options,
            str(ROOT / script),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def tasks(job: str) -> dict[str, dict[str, str]]:
    """The array's tasks as scontrol shows them: array index -> its fields (JobState, ExitCode, ...)."""
    shown = {}
    for line in slurm("scontrol", "-o", "show", "job", job, check=False).splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        shown[fields.get("ArrayTaskId", "")] = fields
    return shown


def wait_for(job: str, seconds: float = WAIT) -> dict[str, dict[str, str]]:
    """Wait until no task of ``job`` is pending or running; their final fields."""
    deadline = time.monotonic() + seconds
    while slurm("squeue", "-h", "-j", job, "-o", "%i", check=False).strip():
        if time.monotonic() > deadline:
            slurm("scancel", job, check=False)
            raise AssertionError(f"job {job} still running after {seconds:.0f} s: {tasks(job)}")
        time.sleep(1)
    return tasks(job)


def totals(url: str) -> dict[str, list[float]]:
    """Each student's total per notebook row of the gradebook (what labs export writes; two would be a duplicate)."""
    from graders.nbgrader.reports import gradebook_rows

    found: dict[str, list[float]] = {}
    for row in gradebook_rows(url):
        found.setdefault(row["student"], []).append(row["score"])
    return found


@pytest.fixture(scope="module")
def class_on_cluster(cluster: str, gradebook: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The class graded by the 4-task array, task KILLED cancelled mid-run and resubmitted alone."""
    work = tmp_path_factory.mktemp("slurm-class")
    expected = make_class(work / "submitted")
    reports = work / "reports"
    env = {
        **labs_env(),
        "SUBMISSIONS": str(work / "submitted"),
        "CHAPTER": "fx_basic",
        "COURSE": str(FIXTURES / "course"),
        "GRADEBOOK_URL": gradebook,
        "REPORTS": str(reports),
        "LABS": str(BIN / "labs"),
        "JOBS": "1",
    }
    env.pop("SHARDS", None)
    start = time.monotonic()
    job = submit("ci/slurm/grade.sbatch", f"1-{TASKS}", env, work / "task-%a.out", "--cpus-per-task=1")
    deadline = time.monotonic() + WAIT
    while tasks(job).get(str(KILLED), {}).get("JobState") != "RUNNING":  # cancel it once it has started
        assert time.monotonic() < deadline, tasks(job)
        time.sleep(0.5)
    logs = reports / "root" / f"shard-{KILLED}" / "logs"  # the sandboxes' logs: grading has begun
    while not (logs.is_dir() and any(logs.iterdir())):
        assert time.monotonic() < deadline, tasks(job)
        time.sleep(0.2)
    slurm("scancel", f"{job}_{KILLED}")
    first = wait_for(job)
    retry = submit("ci/slurm/grade.sbatch", str(KILLED), env, work / "retry-%a.out", "--cpus-per-task=1")
    second = wait_for(retry)
    seconds = time.monotonic() - start
    outputs = {i: (work / f"task-{i}.out").read_text(errors="replace") for i in range(1, TASKS + 1)}
    outputs[KILLED] = (work / f"retry-{KILLED}.out").read_text(errors="replace")
    return {
        "expected": expected,
        "reports": reports,
        "url": gradebook,
        "first": first,
        "retry": second,
        "outputs": outputs,
        "work": work,
        "seconds": seconds,
    }


@pytest.mark.slurm
def test_the_array_ran_and_the_cancelled_task_was_retried_alone(class_on_cluster: dict) -> None:
    first, retry, outputs = class_on_cluster["first"], class_on_cluster["retry"], class_on_cluster["outputs"]
    assert {i: t["JobState"] for i, t in first.items()} == {
        str(i): "CANCELLED" if i == KILLED else "COMPLETED" for i in range(1, TASKS + 1)
    }, first
    assert [(t["JobState"], t["ExitCode"]) for t in retry.values()] == [("COMPLETED", "0:0")], retry
    assert (class_on_cluster["reports"] / "SHARDS").read_text().strip() == str(TASKS)
    cancelled = first[str(KILLED)][
        "JobId"
    ]  # its sandboxes' cgroups went with it, so Slurm could remove the job's
    assert not list(Path("/sys/fs/cgroup").glob(f"*/slurm*/uid_*/job_{cancelled}")), "cgroups left by scancel"
    assert f"shard {KILLED}/{TASKS}" in outputs[KILLED]  # the retry, alone in its array, still shard 2 of 4
    for text in outputs.values():
        assert f"{STUDENTS // TASKS}/{STUDENTS // TASKS} notebooks graded" in text, text[-2000:]


@pytest.mark.slurm
def test_every_student_graded_once_by_their_own_shard(class_on_cluster: dict) -> None:
    students = sorted(class_on_cluster["expected"])
    graded: Counter[str] = Counter()
    for i in range(1, TASKS + 1):
        results = json.loads((class_on_cluster["reports"] / f"shard-{i}" / "results.json").read_text())
        mine = {g["student"] for g in results["grades"]}
        assert mine == set(students[i - 1 :: TASKS]), f"shard {i} graded another's students"
        graded.update(mine)
    assert graded == Counter(students)
    recorded = totals(class_on_cluster["url"])
    assert sorted(recorded) == students
    assert all(len(scores) == 1 for scores in recorded.values()), "a student recorded twice"


@pytest.mark.slurm
def test_scores_equal_one_machines(class_on_cluster: dict) -> None:
    work = class_on_cluster["work"]
    proc = labs(
        "grade",
        str(work / "submitted"),
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        "fx_basic",
        "--root",
        str(work / "one-machine"),
        "--jobs",
        "2",
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    from graders.nbgrader.course_root import CourseRoot

    one = {student: scores[0] for student, scores in totals(CourseRoot(work / "one-machine").db_url).items()}
    cluster = {student: scores[0] for student, scores in totals(class_on_cluster["url"]).items()}
    assert cluster == one == class_on_cluster["expected"]
    proc = labs(
        "export", "--format", "csv", "--db", class_on_cluster["url"], "--out", str(work / "grades.csv")
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{STUDENTS} rows written" in proc.stdout


@pytest.mark.slurm
def test_one_command_gives_every_students_feedback_and_the_shards_share_the_salt(
    class_on_cluster: dict,
) -> None:
    reports, url = class_on_cluster["reports"], class_on_cluster["url"]
    fingerprints = {
        json.dumps(json.loads((reports / f"shard-{i}" / "results.json").read_text())["salts"])
        for i in range(1, TASKS + 1)
    }
    assert len(fingerprints) == 1, fingerprints  # every task drew the class's inputs
    proc = labs(
        "feedback",
        "--course",
        str(FIXTURES / "course"),
        "--chapter",
        "fx_basic",
        "--db",
        url,
        "--root",
        str(reports / "root"),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    pages = {p.parent.parent.name for p in (reports / "root" / "feedback").glob("*/fx_basic/lab_basic.html")}
    assert pages == set(class_on_cluster["expected"])


@pytest.mark.slurm
def test_sandboxes_nest_in_slurms_cgroup(class_on_cluster: dict) -> None:
    for text in class_on_cluster["outputs"].values():
        isolation = next(line for line in text.splitlines() if line.startswith("isolation:"))
        assert "user, mount, pid, ipc, network namespaces" in isolation, isolation
        assert (
            "bubblewrap (bwrap) is not in use" not in text
        )  # bubblewrap's user namespaces work under slurmd
        if "proctrack/cgroup" in Path(os.environ["SLURM_CONF"]).read_text():
            assert "nested in Slurm job" in isolation, isolation


@pytest.mark.slurm
def test_course_array_matches_one_machine(cluster: str, tmp_path: Path) -> None:
    env = {
        **labs_env(),
        "NOTEBOOKS": CHAPTER,
        "REPORTS": str(tmp_path / "course"),
        "LABS": str(BIN / "labs"),
        "SMOKE": "1",
    }
    job = submit("ci/slurm/course.sbatch", "1-2", env, tmp_path / "course-%a.out", "--cpus-per-task=1")
    merge = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--dependency=afterany:{job}",
            "--chdir",
            str(ROOT),
            "--output",
            str(tmp_path / "merge.out"),
            str(ROOT / "ci/slurm/course.sbatch"),
            "merge",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    array = wait_for(job)
    assert {t["JobState"] for t in array.values()} == {"COMPLETED"}, array
    assert [t["JobState"] for t in wait_for(merge).values()] == ["COMPLETED"], (
        tmp_path / "merge.out"
    ).read_text()
    merged = json.loads((tmp_path / "course" / "report.json").read_text())
    assert (tmp_path / "course" / "site" / "index.html").is_file()
    proc = labs(
        "run", CHAPTER, "--smoke", "--jobs", "2", "--device", "cpu", "--report", str(tmp_path / "one")
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    one = json.loads((tmp_path / "one" / "report.json").read_text())
    verdicts = [
        {n["notebook"]: (n["status"], n["cell"], len(n["skipped"])) for n in r["notebooks"]}
        for r in (merged, one)
    ]
    assert verdicts[0] == verdicts[1]
    assert len(verdicts[0]) == len(list((ROOT / CHAPTER).glob("*.ipynb")))
    assert merged["totals"]["notebooks"] == one["totals"]["notebooks"]
    shards = [
        json.loads((tmp_path / "course" / f"shard-{i}" / "report.json").read_text())["notebooks"]
        for i in (1, 2)
    ]
    assert all(shards) and not {n["notebook"] for n in shards[0]} & {n["notebook"] for n in shards[1]}


def _script(tmp_path: Path, script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """Run an sbatch script as a task would, ``labs`` stubbed to print its arguments (no cluster needed)."""
    stub = tmp_path / "labs-stub"
    stub.write_text('#!/bin/sh\necho "labs $*"\n')
    stub.chmod(0o755)
    base = {
        "PATH": os.environ["PATH"],
        "LABS": str(stub),
        "REPORTS": str(tmp_path / "reports"),
        "SLURM_SUBMIT_DIR": str(ROOT),
        "SLURM_ARRAY_JOB_ID": "77",
    }
    return subprocess.run(
        ["bash", str(ROOT / script), *args], env=base | env, capture_output=True, text=True, timeout=30
    )


def test_grade_script_shards_and_retries_without_a_cluster(tmp_path: Path) -> None:
    need = {"SUBMISSIONS": "/subs", "GRADEBOOK_URL": "postgresql://u:p@db/grades", "CHAPTER": "fx_basic"}
    lines = []
    for i in range(1, TASKS + 1):
        proc = _script(
            tmp_path,
            "ci/slurm/grade.sbatch",
            need | {"SLURM_ARRAY_TASK_ID": str(i), "SLURM_ARRAY_TASK_COUNT": str(TASKS)},
        )
        assert proc.returncode == 0, proc.stderr
        lines.append(proc.stdout.splitlines()[-1])
    assert lines[0] == (
        f"labs grade /subs --shard 1/{TASKS} --db postgresql://u:p@db/grades --report "
        f"{tmp_path}/reports/shard-1 --root {tmp_path}/reports/root/shard-1 --salts {tmp_path}/reports/root/salts "
        "--jobs 1 --chapter fx_basic"
    )
    assert [line.split("--shard ")[1].split()[0] for line in lines] == [
        f"{i}/{TASKS}" for i in range(1, TASKS + 1)
    ]
    retry = _script(
        tmp_path, "ci/slurm/grade.sbatch", need | {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "1"}
    )
    assert f"--shard 1/{TASKS} " in retry.stdout  # alone in its array, still 1 of the recorded N
    other = _script(tmp_path, "ci/slurm/grade.sbatch", need | {"SLURM_ARRAY_TASK_ID": "1", "SHARDS": "5"})
    assert other.returncode == 2 and "split in 4 shards, not 5" in other.stderr
    missing = _script(tmp_path, "ci/slurm/grade.sbatch", {"SLURM_ARRAY_TASK_ID": "1"})
    assert missing.returncode != 0 and "set SUBMISSIONS" in missing.stderr


def test_course_script_devices_and_merge_without_a_cluster(tmp_path: Path) -> None:
    task = {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "2", "SMOKE": "1", "NOTEBOOKS": CHAPTER}
    cpu = _script(tmp_path, "ci/slurm/course.sbatch", task)
    assert cpu.stdout.splitlines()[-1] == (
        f"labs run {CHAPTER} --shard 2/2 --device cpu --jobs 1 --report {tmp_path}/reports/shard-2 --smoke"
    )
    gpu = _script(tmp_path, "ci/slurm/course.sbatch", task | {"SLURM_JOB_GPUS": "0"})
    assert "--device cuda" in gpu.stdout  # Slurm gave the task a GPU (--gres=gpu:1)
    (
        tmp_path / "reports" / "shard-1"
    ).mkdir()  # shard 2 has not reported: the merge says so, and merges shard 1
    partial = _script(tmp_path, "ci/slurm/course.sbatch", {}, "merge")
    assert "1 of 2 shards reported" in partial.stderr
    (tmp_path / "reports" / "shard-2").mkdir()
    merge = _script(tmp_path, "ci/slurm/course.sbatch", {}, "merge")
    assert merge.stdout.splitlines()[-1] == (
        f"labs run-merge {tmp_path}/reports/shard-1/ {tmp_path}/reports/shard-2/ "
        f"--report {tmp_path}/reports --html"
    )


@pytest.mark.parametrize(
    ("proc_cgroup", "within"),
    [
        ("4:memory:/slurm_vm/uid_0/job_12/step_0/task_0\n2:cpuacct:/\n", "Slurm job 12's cgroup (memory:"),
        ("0::/system.slice/slurmstepd.scope/job_7/step_batch/user/task_0\n", "Slurm job 7's cgroup (v2:"),
        (
            "6:freezer:/slurm/uid_0/job_3/step_0\n4:memory:/\n",
            "",
        ),  # a controller the sandboxes' groups do not use
        ("4:memory:/process_api/6cb7\n0::/\n", ""),
    ],
)
def test_scheduler_group(proc_cgroup: str, within: str) -> None:
    found = scheduler_group(proc_cgroup)
    assert found.startswith(within) if within else found == ""
