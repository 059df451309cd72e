"""Grading beyond one machine: the Kubernetes Indexed Job and the GitHub Actions matrix, checked without kubectl.

The Job is validated against the Kubernetes batch/v1 JSON schema (kubernetes-validate, strict: unknown
fields fail), the workflow against SchemaStore's GitHub workflow schema (the copy in check-jsonschema, offline);
then each one's real command line is run by bash with ``labs`` stubbed, once per pod or matrix entry,
to see that the shards are 1/N .. N/N, each exactly once, and that the gradebook URL is the secret's.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest
import yaml

from graders.pipeline import in_shard
from labs.options import parse_shard
from tests.conftest import ROOT

JOB = ROOT / "ci" / "k8s" / "grade-job.yaml"
WORKFLOW = ROOT / ".github" / "workflows" / "grade.yml"
DB_URL = "postgresql://grader:secret@db.example:5432/grades"
STUB = 'labs() { printf "%s\\n" "$@"; }\n'  # prints each argument of the labs call on its own line

kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install -e '.[dev]'")


def _assert_every_student_once(shards: list[str]) -> None:
    """labs grade's own parsing and split of these --shard values grade each of a class exactly once."""
    class_ = [SimpleNamespace(student=f"student{k:02d}") for k in range(23)]
    graded = [s.student for spec in shards for s in in_shard(class_, *parse_shard(spec))]  # type: ignore[arg-type]
    assert sorted(graded) == [s.student for s in class_]


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _labs_args(script: str, env: dict[str, str]) -> list[str]:
    """The arguments ``script`` passes to labs, run by bash with labs replaced by a printer."""
    done = subprocess.run(
        ["bash", "-c", STUB + script.replace(".venv/bin/labs", "labs")],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def _option(args: list[str], name: str) -> str:
    assert name in args, f"{name} missing from labs {shlex.join(args)}"
    return args[args.index(name) + 1]


def _container(job: dict) -> dict:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


def _pod_env(container: dict, index: int) -> dict[str, str]:
    """The container's plain variables, the secret's URL, and what Kubernetes sets in an Indexed Job."""
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    secret = [e for e in container["env"] if "valueFrom" in e]
    assert [e["valueFrom"]["secretKeyRef"] for e in secret] == [{"name": "labs-gradebook", "key": "url"}]
    env[secret[0]["name"]] = DB_URL
    return {**env, "JOB_COMPLETION_INDEX": str(index)}


def test_job_is_a_valid_batch_v1_job():
    job = _load(JOB)
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    kubernetes_validate.validate(job, kubernetes_validate.latest_version(), strict=True)
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] <= spec["completions"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


def test_schema_check_refuses_a_broken_job():
    broken = copy.deepcopy(_load(JOB))
    broken["spec"]["completions"] = "four"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, kubernetes_validate.latest_version(), strict=True)
    unknown = copy.deepcopy(_load(JOB))
    unknown["spec"]["template"]["spec"]["containers"][0]["enviroment"] = []
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(unknown, kubernetes_validate.latest_version(), strict=True)


def test_job_pods_grade_shards_1_to_n_once_into_the_secret_gradebook():
    job = _load(JOB)
    n, container = job["spec"]["completions"], _container(job)
    assert container["command"] == ["/bin/bash", "-c"]
    (script,) = container["args"]
    shards, reports = [], set()
    for index in range(n):  # Kubernetes numbers an Indexed Job's pods 0 .. completions-1
        args = _labs_args(script, _pod_env(container, index))
        assert args[:2] == ["grade", "/submissions"]
        assert _option(args, "--db") == DB_URL
        shards.append(_option(args, "--shard"))
        reports.add(_option(args, "--report"))
    assert shards == [f"{i}/{n}" for i in range(1, n + 1)]
    _assert_every_student_once(shards)
    assert len(reports) == n  # each pod writes its own results.json
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/submissions"]["readOnly"] is True


def _workflow_errors(workflow: dict) -> list[str]:
    """What SchemaStore's GitHub workflow schema (the copy vendored in check-jsonschema) finds wrong."""
    schemas = pytest.importorskip("check_jsonschema.builtin_schemas", reason="pip install -e '.[dev]'")
    schema = json.loads(
        (resources.files(schemas) / "vendor" / "github-workflows.json").read_text(encoding="utf-8")
    )
    workflow = dict(workflow)
    if True in workflow:  # PyYAML (YAML 1.1) reads the key `on` as True; GitHub reads it as "on"
        workflow["on"] = workflow.pop(True)
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [error.message for error in validator.iter_errors(workflow)]


def test_workflow_matches_the_github_workflow_schema():
    assert _workflow_errors(_load(WORKFLOW)) == []
    broken = _load(WORKFLOW)
    broken["jobs"]["grade"]["strategy"]["matrix"] = "1..4"
    assert _workflow_errors(broken)
    others = sorted(set(WORKFLOW.parent.glob("*.yml")) - {WORKFLOW})  # the other workflow files, while here
    assert [p.name for p in others] == ["cpu.yml", "gpu.yml"]
    for path in others:
        assert _workflow_errors(_load(path)) == [], path.name


def test_one_ci_definition_that_installs_what_make_test_asks_for():
    """The workflow runs .ci/run (as root, through sudo), the script CI runs on a clean clone; as root it
    installs every package `make system-deps` names, then runs make test (the README's test command)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    asked = set(re.findall(r'need="\$\$need (\S+)"', makefile))
    assert asked, "make system-deps names no package"
    steps = _load(WORKFLOW.parent / "cpu.yml")["jobs"]["test"]["steps"]
    runs = [line.strip() for step in steps for line in step.get("run", "").splitlines()]
    assert runs.count(".ci/run") == 1 and not any(line.startswith("make ") for line in runs)
    assert any(line.startswith('sudo env "PATH=$PATH"') for line in runs)
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installed = {word for group in re.findall(r'need="\$need ([^"]+)"', script) for word in group.split()}
    assert asked <= installed, asked - installed
    assert re.search(r"^time make test$", script, re.MULTILINE)


def _grade_step(job: dict) -> dict:
    (step,) = [s for s in job["steps"] if "labs grade" in s.get("run", "")]
    return step


def test_workflow_matrix_grades_shards_1_to_n_once_into_the_secret_gradebook():
    workflow = _load(WORKFLOW)
    job = workflow["jobs"]["grade"]
    n, matrix = int(job["env"]["SHARDS"]), job["strategy"]["matrix"]["shard"]
    assert job["strategy"]["fail-fast"] is False  # one failed shard does not cancel the others
    step = _grade_step(job)
    assert step["env"]["GRADEBOOK_URL"] == "${{ secrets.GRADEBOOK_URL }}"
    assert step["env"]["SHARD"] == "${{ matrix.shard }}"
    assert "${{" not in step["run"]  # inputs reach the shell as variables, never pasted into the script
    shards = []
    for shard in matrix:
        env = {
            "SHARDS": str(n),
            "SHARD": str(shard),
            "GRADEBOOK_URL": DB_URL,
            "CHAPTER": "02_tensors",
            "SUBMISSIONS": "submitted",
        }
        args = _labs_args(step["run"], env)
        assert args[:2] == ["grade", "submitted"] and _option(args, "--db") == DB_URL
        shards.append(_option(args, "--shard"))
    assert shards == [f"{i}/{n}" for i in range(1, n + 1)]
    _assert_every_student_once(shards)
    triggers = workflow.get("on", workflow.get(True))  # PyYAML reads the key `on` as True
    assert list(triggers) == ["workflow_dispatch"]
