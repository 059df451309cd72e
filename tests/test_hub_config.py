"""`labs hub`'s pieces without a hub or a browser: the config it writes, the class list, the limits, and the
exchange round trip with its owner check.

tests/test_hub.py drives the whole class in Chromium and tests/test_hub_class.py attacks it; these check the same
pieces in seconds: the jupyterhub_config.py of a class and of --demo (executed with a stand-in for JupyterHub's
config object and spawner), each user's nbgrader config, the class list, the default limits, a student's cgroup
(as root), and release -> submit -> collect -> release feedback -> fetch feedback through nbgrader's exchange,
the student's side played by nbgrader's own exchange classes with the config `labs hub` gives them, and collect
refusing a submission made by someone other than the student it names.
"""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeSubmit
from traitlets.config import Config

from graders.nbgrader import exchange
from graders.nbgrader.course_root import CourseRoot
from graders.nbgrader.release import build_release
from labs.hub import GIB, HubPlan, Limits, default_disk, default_limits, prepare, subdomain_host_for
from labs.hub.roster import read_roster
from tests.conftest import FIXTURES, ROOT, labs

pytestmark = pytest.mark.slow

CHAPTER = "fx_basic"


def plan_in(root: Path, **options) -> HubPlan:
    return HubPlan(
        root,
        8123,
        "teacher",
        ("ada", "ben"),
        root / "grading",
        Path("/usr/bin/true"),
        hub_port=8124,
        proxy_api_port=8125,
        **options,
    )


def load_hub_config(path: Path) -> tuple[Config, dict]:
    config = Config()
    namespace = runpy.run_path(str(path), init_globals={"get_config": lambda: config})
    return config, namespace


def spawn(namespace: dict, config: Config, user: str) -> SimpleNamespace:
    spawner = SimpleNamespace(user=SimpleNamespace(name=user), environment={"KEEP": "1"}, args=[])
    config.Spawner.pre_spawn_hook(spawner)
    return spawner


def test_class_config_signs_in_for_real_and_limits_each_student(tmp_path: Path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    plan = plan_in(tmp_path, limits=Limits(3 * GIB, 0.5, 100), cull_idle=600, https=(cert, key))
    config, namespace = load_hub_config(prepare(plan))
    assert config.JupyterHub.ip == "127.0.0.1" and config.JupyterHub.hub_ip == "127.0.0.1"
    assert config.JupyterHub.port == 8123 and config.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:8125"
    assert config.JupyterHub.authenticator_class == "labs.hub.auth.ClassAuthenticator"
    assert config.ClassAuthenticator.accounts_file == str(tmp_path / "state" / "passwords.csv")
    assert config.NativeAuthenticator.open_signup is False
    assert config.Authenticator.allowed_users == {"teacher", "ada", "ben"}
    assert "admin_users" not in config.Authenticator  # nobody is a hub admin (the role holds access:servers)
    [instructor, culler] = config.JupyterHub.load_roles
    assert instructor["users"] == ["teacher"] and culler["name"] == "idle-culler"
    assert not {"access:servers", "tokens", "admin:users", "admin:auth_state", "shares"} & set(
        instructor["scopes"]
    )
    assert config.JupyterHub.spawner_class == "labs.hub.spawner.ClassSpawner"
    assert (config.ClassSpawner.memory_bytes, config.ClassSpawner.cpus, config.ClassSpawner.processes) == (
        3 * GIB,
        0.5,
        100,
    )
    assert config.ClassSpawner.unlimited_users == {"teacher"}
    assert config.JupyterHub.cleanup_servers and config.JupyterHub.cleanup_proxy
    [culler] = config.JupyterHub.services
    assert culler["name"] == "idle-culler" and "--timeout=600" in culler["command"]
    assert culler["command"][1:3] == ["-m", "jupyterhub_idle_culler"]
    assert config.JupyterHub.load_roles[1]["services"] == ["idle-culler"]
    assert "delete:servers" in config.JupyterHub.load_roles[1]["scopes"]
    assert config.Spawner.environment == {"JUPYTERHUB_ACTIVITY_INTERVAL": "200"}
    assert (config.JupyterHub.ssl_cert, config.JupyterHub.ssl_key) == (str(cert), str(key))
    assert "OMP_NUM_THREADS" in config.Spawner.env_keep and "PATH" in config.Spawner.env_keep

    ada, teacher = spawn(namespace, config, "ada"), spawn(namespace, config, "teacher")
    assert ada.environment == {
        "KEEP": "1",
        "JUPYTER_CONFIG_PATH": str(tmp_path / "config" / "ada"),
        "JUPYTER_PATH": str(tmp_path / "config" / "ada"),
    }
    spec = json.loads((tmp_path / "config" / "ada" / "kernels" / "python3" / "kernel.json").read_text())
    assert spec["argv"][1].endswith("labs/hub/kernel.py") and spec["metadata"]["debugger"] is False
    assert any("formgrader': False" in a for a in ada.args), ada.args
    assert not any("allow_root" in a for a in ada.args + teacher.args)  # each server runs as its own user
    assert not any("formgrader" in a for a in teacher.args), teacher.args
    assert f"--ServerApp.root_dir={tmp_path}" in teacher.args  # holds home/teacher and the course

    student_nbgrader = (tmp_path / "config" / "ada" / "nbgrader_config.py").read_text()
    assert "student_id" not in student_nbgrader  # the unix user names the student
    assert f"c.Exchange.root = {str(tmp_path / 'exchange')!r}" in student_nbgrader
    teacher_nbgrader = (tmp_path / "config" / "teacher" / "nbgrader_config.py").read_text()
    assert "student_id" not in teacher_nbgrader and str(tmp_path / "grading") in teacher_nbgrader
    teacher_config = Config()
    exec(teacher_nbgrader, {"get_config": lambda: teacher_config})
    from nbgrader.exchange import ExchangeFactory

    factory = ExchangeFactory(config=teacher_config)  # formgrader's Collect button: labs collect's class
    assert factory.collect is exchange.OwnedCollect
    assert teacher_config.SanitizeHTML.enabled  # formgrader's feedback is sanitised as labs feedback's is
    disabled = (tmp_path / "config" / "ada" / "labconfig" / "page_config.json").read_text()
    assert "@jupyter/nbgrader:formgrader" in disabled and "@jupyter/nbgrader:create-assignment" in disabled
    assert (
        "formgrader" not in (tmp_path / "config" / "teacher" / "labconfig" / "page_config.json").read_text()
    )


def test_demo_config_is_the_one_user_class_in_a_box(tmp_path: Path):
    plan = plan_in(tmp_path, demo=True, cull_idle=0)
    config, namespace = load_hub_config(prepare(plan))
    assert config.JupyterHub.authenticator_class == "dummy" and config.JupyterHub.spawner_class == "simple"
    assert config.SimpleLocalProcessSpawner.home_dir_template == f"{tmp_path}/home/{{username}}"
    assert "services" not in config.JupyterHub  # --cull-idle 0: no culler
    assert (
        "c.CourseDirectory.student_id = 'ada'"
        in (tmp_path / "config" / "ada" / "nbgrader_config.py").read_text()
    )


def test_class_list_and_default_limits(tmp_path: Path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Name,Email\nada,ada@example.org\n\n# a comment\nben\n")
    assert [(p.name, p.email) for p in read_roster(roster)] == [("ada", "ada@example.org"), ("ben", "")]
    for text, error in (
        ("ada\nada\n", "listed twice"),
        ("Ada Lovelace\n", "not a user name"),
        ("ada,not-an-address\n", "not an e-mail"),
        ("name,email\n", "no one"),
    ):
        roster.write_text(text)
        with pytest.raises(ValueError, match=error):
            read_roster(roster)
    # 30 students on 24 GiB and 2 cores: 80 % of the RAM shared, at least 1 GiB, one core each
    assert default_limits(30, 24 * GIB, 2) == Limits(GIB, 1.0, 256)
    assert default_limits(4, 24 * GIB, 2).memory_bytes == 4 * GIB
    assert default_limits(10, 24 * GIB, 2).memory_bytes == int(24 * GIB * 0.8) // 10


def test_labs_hub_config_only_writes_and_exits(tmp_path: Path):
    roster = tmp_path / "roster.csv"
    roster.write_text("name,email\ncy,cy@example.org\ndee\n")
    result = labs(
        "hub",
        "--config-only",
        "--root",
        str(tmp_path / "hub"),
        "--proxy",
        "/usr/bin/true",
        "--class",
        str(roster),
        "--memory",
        "1.5",
        "--cpus",
        "2",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "jupyterhub -f" in result.stdout
    config, _ = load_hub_config(tmp_path / "hub" / "jupyterhub_config.py")
    assert config.Authenticator.allowed_users == {"instructor", "cy", "dee"}
    assert (config.ClassSpawner.memory_bytes, config.ClassSpawner.cpus) == (int(1.5 * GIB), 2.0)
    assert not (tmp_path / "hub" / "state" / "passwords.csv").exists()  # no accounts without a hub
    assert (
        config.JupyterHub.subdomain_host == "http://localhost:8000"
    )  # on 127.0.0.1 over HTTP: on by default
    for option, expected in (("off", None), ("https://class.example.org", "https://class.example.org")):
        other = labs(
            "hub",
            "--config-only",
            "--root",
            str(tmp_path / option[:3]),
            "--proxy",
            "/usr/bin/true",
            "--subdomain-host",
            option,
            cwd=tmp_path,
        )
        assert other.returncode == 0, other.stdout + other.stderr
        written, _ = load_hub_config(tmp_path / option[:3] / "jupyterhub_config.py")
        assert written.JupyterHub.get("subdomain_host") == expected, option
    bad = labs("hub", "--config-only", "--root", str(tmp_path / "x"), "--student", "Not A Name", cwd=tmp_path)
    assert bad.returncode == 2 and "user names must be" in bad.stderr
    demo = labs(
        "hub",
        "--config-only",
        "--demo",
        "--ip",
        "0.0.0.0",
        "--root",
        str(tmp_path / "y"),
        "--proxy",
        "/usr/bin/true",
        cwd=tmp_path,
    )
    assert demo.returncode == 2 and "127.0.0.1 only" in demo.stderr


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
    app_class(
        coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config
    ).start()


def test_exchange_round_trip_names_each_student(tmp_path: Path):
    """--demo's exchange: one unix user submits for everyone, so collect runs without the owner check."""
    plan = plan_in(tmp_path, demo=True)
    prepare(plan)
    build_release([FIXTURES / "course" / CHAPTER], CourseRoot(plan.grading))
    outbound = exchange.release_assignment(plan.grading, CHAPTER, plan.exchange, ["lab_basic.ipynb"])
    assert sorted(p.name for p in outbound.iterdir()) == ["lab_basic.ipynb"]  # lessons stay out

    for name in ("ada", "ben"):
        as_student(ExchangeFetchAssignment, student(plan, name))
        (plan.home(name) / CHAPTER / "notes.ipynb").write_text("{}")  # not a lab: never collected
        as_student(ExchangeSubmit, student(plan, name))
    inbound = sorted(p.name.split("+")[0] for p in (plan.exchange / "pytorch-labs" / "inbound").iterdir())
    assert inbound == ["ada", "ben"]

    found = exchange.collect(plan.grading, CHAPTER, plan.exchange, ["lab_basic.ipynb"], check_owner=False)
    assert sorted(found.folders) == ["ada", "ben"] and not found.refused
    assert sorted(p.name for p in found.folders["ada"].iterdir()) == [
        "lab_basic.ipynb",
        "submission_secret.txt",
        "timestamp.txt",
    ]

    feedback = plan.grading / "feedback" / "ada" / CHAPTER
    feedback.mkdir(parents=True)
    (feedback / "lab_basic.html").write_text("<p>Score: 1.0 / 2.0</p>")  # what labs feedback renders
    assert exchange.release_feedback(plan.grading, CHAPTER, plan.exchange) == ["ada"]
    as_student(ExchangeFetchFeedback, student(plan, "ada"))
    fetched = list((plan.home("ada") / CHAPTER / "feedback").glob("*/lab_basic.html"))
    assert [p.read_text() for p in fetched] == ["<p>Score: 1.0 / 2.0</p>"]
    as_student(ExchangeFetchFeedback, student(plan, "ben"))
    assert not (plan.home("ben") / CHAPTER / "feedback").exists()  # ada's feedback is not ben's


def test_collect_takes_only_what_the_named_student_submitted(tmp_path: Path, monkeypatch):
    """ada submits her own work, then twice as ben (her nbgrader config says she is ben); ben submits once, before
    her. Collect refuses both forgeries and takes ben's own submission, whatever their timestamps. As root: each
    submission is chowned to a stand-in uid of the student who made it (CI runs as root)."""
    if os.geteuid() != 0:
        pytest.skip("each submission is chowned to its maker's uid: as root (CI is)")
    uids = {"ada": 61001, "ben": 61002}
    monkeypatch.setattr(exchange, "user_name", {v: k for k, v in uids.items()}.get)
    plan = plan_in(tmp_path, demo=True)
    prepare(plan)
    build_release([FIXTURES / "course" / CHAPTER], CourseRoot(plan.grading))
    exchange.release_assignment(plan.grading, CHAPTER, plan.exchange, ["lab_basic.ipynb"])
    made_by: dict[str, str] = {}
    inbound = plan.exchange / "pytorch-labs" / "inbound"

    def submit(who: str, named: str) -> None:
        config = student(plan, who)
        config.CourseDirectory.student_id = named
        before = set(inbound.iterdir()) if inbound.exists() else set()
        if not (plan.home(who) / CHAPTER).exists():
            as_student(ExchangeFetchAssignment, config)
        as_student(ExchangeSubmit, config)
        [new] = set(inbound.iterdir()) - before
        for path in [new, *new.rglob("*")]:
            os.chown(path, uids[who], uids[who])
        made_by[new.name] = who

    submit("ben", "ben")
    submit("ada", "ada")
    submit("ada", "ben")
    submit("ada", "ben")
    found = exchange.collect(plan.grading, CHAPTER, plan.exchange, ["lab_basic.ipynb"])
    assert sorted(found.folders) == ["ada", "ben"]
    forged = sorted(name for name, who in made_by.items() if name.startswith("ben+") and who == "ada")
    assert sorted(found.refused) == forged
    assert set(found.refused.values()) == {"submitted by ada, not by the student it names"}
    [genuine] = [name for name, who in made_by.items() if name.startswith("ben+") and who == "ben"]
    collected = (plan.grading / "submitted" / "ben" / CHAPTER / "timestamp.txt").read_text()
    assert collected == (inbound / genuine / "timestamp.txt").read_text()


def test_zero_to_jupyterhub_values():
    """docs/hub.md's values.yaml for the jupyterhub Helm chart sets up the class `labs hub --class` does: checked
    offline, without helm or the chart (docs/hub.md says what that leaves unchecked)."""
    import yaml

    text = (ROOT / "docs" / "hub.md").read_text()
    block = (
        text.split("```yaml\n# values.yaml for the jupyterhub chart", 1)[1]
        .split("\n", 1)[1]
        .split("```", 1)[0]
    )
    values = yaml.safe_load(block)
    assert set(values) == {"hub", "singleuser", "cull", "proxy"}
    hub = values["hub"]["config"]
    assert hub["JupyterHub"]["authenticator_class"] == "nativeauthenticator.NativeAuthenticator"
    assert hub["NativeAuthenticator"]["open_signup"] is False
    assert "admin_users" not in hub["Authenticator"]
    role = values["hub"]["loadRoles"]["instructor"]
    assert role["users"] == ["instructor"] and not {"access:servers", "tokens", "admin:users"} & set(
        role["scopes"]
    )
    single = values["singleuser"]
    assert single["memory"]["limit"] == "1G" and single["cpu"]["limit"] == 1
    assert single["cmd"] == "jupyterhub-singleuser" and single["defaultUrl"] == "/lab"
    [volume] = single["storage"]["extraVolumes"]
    [mount] = single["storage"]["extraVolumeMounts"]
    assert volume["name"] == mount["name"] == "exchange" and "persistentVolumeClaim" in volume
    nbgrader_config = Config()
    exec(single["extraFiles"]["nbgrader-config"]["stringData"], {"get_config": lambda: nbgrader_config})
    assert nbgrader_config.Exchange.root == mount["mountPath"]
    assert nbgrader_config.CourseDirectory.course_id == "pytorch-labs"
    assert values["cull"] == {"enabled": True, "timeout": 3600, "every": 600}
    assert values["proxy"]["https"]["enabled"] is True
    # the hook in extraConfig is Python that gives a student what labs hub gives them, the instructor nothing
    namespace: dict = {"c": Config()}
    exec(values["hub"]["extraConfig"]["students"], namespace)
    spawner = SimpleNamespace(user=SimpleNamespace(name="ada"), args=[])
    namespace["c"].KubeSpawner.pre_spawn_hook(spawner)
    plan = plan_in(Path("/x"))
    from labs.hub import server_args

    assert spawner.args == server_args(plan, "ada")
    teacher = SimpleNamespace(user=SimpleNamespace(name="instructor"), args=[])
    namespace["c"].KubeSpawner.pre_spawn_hook(teacher)
    assert teacher.args == []


def test_what_a_class_keeps_from_students(tmp_path: Path):
    """The course is always private; the checkout's history and tests only when the course is the checkout's.
    One-time passwords: one per person, kept across runs, root's alone."""
    from labs.hub import CHECKOUT
    from labs.hub.run import read_passwords, write_passwords
    from labs.hub.users import private_paths

    own = private_paths(plan_in(tmp_path / "hub", course=CHECKOUT / "course"))
    assert CHECKOUT / "course" in own and CHECKOUT / "tests" in own and CHECKOUT / ".git" in own
    assert all(p.exists() for p in own)
    (tmp_path / "course").mkdir()
    elsewhere = private_paths(plan_in(tmp_path / "hub", course=tmp_path / "course"))
    assert (
        elsewhere[0] == tmp_path / "course" and CHECKOUT / "course" in elsewhere
    )  # the checkout's, whatever --course
    assert not {CHECKOUT / n for n in ("labutils", "labs", "graders", "zygote")} & set(own)
    default_root = private_paths(plan_in(CHECKOUT / "build" / "hub"))
    assert CHECKOUT / "build" not in default_root and CHECKOUT / "build" / "hub" not in default_root

    plan = plan_in(tmp_path)
    first = write_passwords(plan)
    assert sorted(first) == ["ada", "ben", "teacher"] and all(len(p) >= 16 for p in first.values())
    assert plan.passwords.stat().st_mode & 0o777 == 0o600
    more = HubPlan(
        tmp_path, 8123, "teacher", ("ada", "ben", "cy"), tmp_path / "grading", Path("/usr/bin/true")
    )
    again = write_passwords(more)
    assert {k: again[k] for k in first} == first  # everyone keeps theirs
    assert read_passwords(plan.passwords) == again and "cy" in again


def test_subdomain_host_default_and_options():
    """--subdomain-host: localhost by default on 127.0.0.1 over HTTP (a class), else off; a URL without a path."""
    assert subdomain_host_for(None, 8000) == "http://localhost:8000"
    assert subdomain_host_for(None, 8000, ip="0.0.0.0") == ""
    assert subdomain_host_for(None, 8000, https=True) == ""
    assert subdomain_host_for(None, 8000, demo=True) == ""
    assert subdomain_host_for("localhost", 8443, https=True) == "https://localhost:8443"
    assert subdomain_host_for("off", 8000) == ""
    assert subdomain_host_for("https://Class.Example.org:8443/", 8000) == "https://class.example.org:8443"
    for bad in ("class.example.org", "https://class.example.org/hub", "ftp://x.org", "https://x.org:8000:1"):
        with pytest.raises(ValueError, match="--subdomain-host"):
            subdomain_host_for(bad, 8000)


def test_disk_default_and_option(tmp_path: Path):
    """--disk: 2 GiB a student, or an even share of half the free disk when less (at least 256 MiB); the exchange
    32 MiB a person, at least 256 MiB; a --disk under 64 MiB (but 0) is refused."""
    assert default_disk(10, 100 * GIB) == 2 * GIB
    assert default_disk(10, 10 * GIB) == GIB // 2
    assert default_disk(100, 10 * GIB) == 256 << 20
    plan = HubPlan(
        tmp_path, 8000, "instructor", tuple(f"s{n}" for n in range(19)), tmp_path / "g", Path("/x")
    )
    assert plan.exchange_bytes == 640 << 20 and plan.disk_bytes == 0
    bad = labs(
        "hub",
        "--config-only",
        "--root",
        str(tmp_path / "x"),
        "--proxy",
        "/usr/bin/true",
        "--disk",
        "0.01",
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "at least 1/16 GiB" in bad.stderr, bad.stderr


def test_no_two_servers_of_a_class_draw_the_same_port(monkeypatch) -> None:
    """Twenty servers start within a second: each port drawn stays its server's until it stops (a draw only
    binds and lets go, so without the reservation two could draw one free port, and the hub would route the
    second student to the first one's server)."""
    from labs.hub import spawner

    monkeypatch.setattr(spawner, "HANDED_OUT", set())
    low, high = 21000, 21019
    drawn = [spawner.server_port(low, high, attempts=10_000) for _ in range(high - low + 1)]
    assert sorted(drawn) == list(range(low, high + 1))
    with pytest.raises(RuntimeError, match="no free port"):
        spawner.server_port(low, high, attempts=500)
    spawner.release_port(21007)
    assert spawner.server_port(low, high, attempts=10_000) == 21007


def test_a_second_hub_on_the_same_root_is_refused(tmp_path: Path) -> None:
    """An outsider started a second labs hub on one --root while the first was stopping: the first's clean-up
    left the hub's database readable by everyone. One hub per root, the second refused, saying why."""
    from labs.hub.run import ClassNotPossible, one_hub_per_root

    with one_hub_per_root(tmp_path / "hub"):
        with pytest.raises(ClassNotPossible, match="another labs hub is running on"):
            with one_hub_per_root(tmp_path / "hub"):
                pass
    with one_hub_per_root(tmp_path / "hub"):  # free again once the first has stopped
        pass
