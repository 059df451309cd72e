"""`labs hub`'s pieces without a hub or a browser: the config it writes, and the exchange round trip.

tests/test_hub.py drives the whole class in Chromium; these check the same pieces in seconds: the
jupyterhub_config.py (executed with a stand-in for JupyterHub's config object and spawner), each user's
nbgrader config, and release -> submit -> collect -> release feedback -> fetch feedback through nbgrader's
exchange, the student's side played by nbgrader's own exchange classes with the config `labs hub` gives them.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeSubmit
from traitlets.config import Config

from graders import exchange
from graders.release import build_release
from labs.hub import HubPlan, prepare
from tests.conftest import FIXTURES, labs

pytestmark = pytest.mark.slow

CHAPTER = "fx_basic"


def plan_in(root: Path) -> HubPlan:
    return HubPlan(root, 8123, "teacher", ("ada", "ben"), root / "grading", Path("/usr/bin/true"),
                   hub_port=8124, proxy_api_port=8125)


def load_hub_config(path: Path) -> tuple[Config, dict]:
    config = Config()
    namespace = runpy.run_path(str(path), init_globals={"get_config": lambda: config})
    return config, namespace


def spawn(namespace: dict, config: Config, user: str) -> SimpleNamespace:
    spawner = SimpleNamespace(user=SimpleNamespace(name=user), environment={"KEEP": "1"}, args=[])
    config.Spawner.pre_spawn_hook(spawner)
    return spawner


def test_hub_config_is_local_and_gives_each_user_their_own_config(tmp_path: Path):
    plan = plan_in(tmp_path)
    config, namespace = load_hub_config(prepare(plan))
    assert config.JupyterHub.ip == "127.0.0.1" and config.JupyterHub.hub_ip == "127.0.0.1"
    assert config.JupyterHub.port == 8123 and config.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:8125"
    assert config.Authenticator.allowed_users == {"teacher", "ada", "ben"}
    assert config.Authenticator.admin_users == {"teacher"}
    assert config.JupyterHub.cleanup_servers and config.JupyterHub.cleanup_proxy
    assert config.SimpleLocalProcessSpawner.home_dir_template == f"{tmp_path}/home/{{username}}"

    ada, teacher = spawn(namespace, config, "ada"), spawn(namespace, config, "teacher")
    assert ada.environment == {"KEEP": "1", "JUPYTER_CONFIG_PATH": str(tmp_path / "config" / "ada")}
    assert any("formgrader': False" in a for a in ada.args), ada.args
    assert not any("formgrader" in a for a in teacher.args), teacher.args
    assert f"--ServerApp.root_dir={tmp_path}" in teacher.args  # holds home/teacher and the course

    student_nbgrader = (tmp_path / "config" / "ada" / "nbgrader_config.py").read_text()
    assert "c.CourseDirectory.student_id = 'ada'" in student_nbgrader
    assert f"c.Exchange.root = {str(tmp_path / 'exchange')!r}" in student_nbgrader
    teacher_nbgrader = (tmp_path / "config" / "teacher" / "nbgrader_config.py").read_text()
    assert "student_id" not in teacher_nbgrader and str(tmp_path / "grading") in teacher_nbgrader
    disabled = (tmp_path / "config" / "ada" / "labconfig" / "page_config.json").read_text()
    assert "@jupyter/nbgrader:formgrader" in disabled and "@jupyter/nbgrader:create-assignment" in disabled
    assert "formgrader" not in (tmp_path / "config" / "teacher" / "labconfig" / "page_config.json").read_text()


def test_labs_hub_config_only_writes_and_exits(tmp_path: Path):
    result = labs("hub", "--config-only", "--root", str(tmp_path / "hub"), "--proxy", "/usr/bin/true",
                  "--student", "cy", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "jupyterhub -f" in result.stdout
    config, _ = load_hub_config(tmp_path / "hub" / "jupyterhub_config.py")
    assert config.Authenticator.allowed_users == {"instructor", "cy"}
    bad = labs("hub", "--config-only", "--root", str(tmp_path / "x"), "--student", "Not A Name", cwd=tmp_path)
    assert bad.returncode == 2 and "user names must be" in bad.stderr


def student(plan: HubPlan, name: str) -> Config:
    """What `labs hub` gives a student's server: their nbgrader config, home and nbgrader cache."""
    config = Config()
    config.CourseDirectory.course_id = "pytorch-labs"
    config.CourseDirectory.student_id = name
    config.CourseDirectory.assignment_id = CHAPTER
    config.Exchange.root = str(plan.exchange)
    config.Exchange.assignment_dir = str(plan.home(name))
    config.Exchange.cache = str(plan.home(name) / ".local" / "share" / "jupyter" / "nbgrader_cache")
    return config


def as_student(app_class, config: Config) -> None:
    app_class(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
              config=config).start()


def test_exchange_round_trip_names_each_student(tmp_path: Path):
    plan = plan_in(tmp_path)
    prepare(plan)
    build = tmp_path / "nbgrader"
    build_release([FIXTURES / "course" / CHAPTER], build)
    outbound = exchange.release_assignment(build, CHAPTER, plan.exchange, ["lab_basic.ipynb"])
    assert sorted(p.name for p in outbound.iterdir()) == ["lab_basic.ipynb"]  # lessons stay out

    for name in ("ada", "ben"):
        as_student(ExchangeFetchAssignment, student(plan, name))
        (plan.home(name) / CHAPTER / "notes.ipynb").write_text("{}")  # not a lab: never collected
        as_student(ExchangeSubmit, student(plan, name))
    inbound = sorted(p.name.split("+")[0] for p in (plan.exchange / "pytorch-labs" / "inbound").iterdir())
    assert inbound == ["ada", "ben"]

    found = exchange.collect(plan.grading, CHAPTER, plan.exchange, ["lab_basic.ipynb"])
    assert sorted(found.folders) == ["ada", "ben"]
    assert sorted(p.name for p in found.folders["ada"].iterdir()) == [
        "lab_basic.ipynb", "submission_secret.txt", "timestamp.txt"]

    feedback = plan.grading / "feedback" / "ada" / CHAPTER
    feedback.mkdir(parents=True)
    (feedback / "lab_basic.html").write_text("<p>Score: 1.0 / 2.0</p>")  # what labs feedback renders
    assert exchange.release_feedback(plan.grading, CHAPTER, plan.exchange) == ["ada"]
    as_student(ExchangeFetchFeedback, student(plan, "ada"))
    fetched = list((plan.home("ada") / CHAPTER / "feedback").glob("*/lab_basic.html"))
    assert [p.read_text() for p in fetched] == ["<p>Score: 1.0 / 2.0</p>"]
    as_student(ExchangeFetchFeedback, student(plan, "ben"))
    assert not (plan.home("ben") / CHAPTER / "feedback").exists()  # ada's feedback is not ben's
