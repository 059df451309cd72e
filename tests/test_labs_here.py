"""`labs_here` (tests/inprocess.py) runs `labs` commands inside the test process: what a separate process would
show or do differently must still reach the test. Each case is a command that misbehaves on purpose."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import warnings

import pytest
import typer

from tests.inprocess import CommandTimeout, labs_here

fake = typer.Typer()


@fake.command()
def thread(daemon: bool = False) -> None:
    threading.Thread(
        target=time.sleep, args=(8 if not daemon else 1,), name="left-running", daemon=daemon
    ).start()


@fake.command()
def child() -> None:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


@fake.command()
def setenv(name: str = "LABS_HERE_LEAK") -> None:
    os.environ[name] = "changed by the command"


@fake.command()
def settings(which: str) -> None:
    import signal

    import torch

    if which == "dtype":
        torch.set_default_dtype(torch.float64)
    elif which == "signal":
        signal.signal(signal.SIGTERM, lambda *_: None)
    else:
        sys.path.insert(0, "/nowhere")


@fake.command()
def hang(caught: bool = False) -> None:
    try:
        time.sleep(30)
    except Exception:
        if not caught:
            raise
        print("swallowed")


@fake.command()
def log() -> None:
    import logging

    logging.getLogger("labs.fake").warning("a record a user sees")


@fake.command()
def child_prints() -> None:
    subprocess.run(
        [sys.executable, "-c", "import sys; print('from a child'); print('child err', file=sys.stderr)"]
    )


@fake.command()
def text_exit() -> None:
    sys.exit("error: told on stderr")


@fake.command()
def warn() -> None:
    warnings.warn("shown to a user", UserWarning, stacklevel=1)
    print("done")


@fake.command()
def crash() -> None:
    raise KeyError("never handled")


@pytest.fixture(autouse=True)
def _fake_labs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("labs.cli.app", fake)


@pytest.mark.parametrize(
    ("command", "left"),
    [(["thread"], "left-running"), (["thread", "--daemon"], "left-running"), (["child"], "processes [")],
)
def test_a_command_that_leaves_something_running_fails(command: list[str], left: str) -> None:
    """A daemon thread fails at once, though it would end in a second: a process's exit would have killed it."""
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"labs .* left behind") as failed:
        labs_here(*command)
    if command == ["thread", "--daemon"]:
        assert time.monotonic() - started < 1
    assert left in str(failed.value)
    if command == ["child"]:
        assert "processes []" not in str(failed.value)


@pytest.mark.parametrize("name", ["LABS_HERE_LEAK", "OMP_NUM_THREADS"])  # a new variable, one already set
def test_a_command_that_changes_the_environment_fails_and_the_change_is_undone(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with pytest.raises(AssertionError, match=rf"environment variables \['{name}'\]"):
        labs_here("setenv", "--name", name)
    assert os.environ.get(name) == ("1" if name == "OMP_NUM_THREADS" else None)


@pytest.mark.parametrize(
    ("which", "named"), [("dtype", "torch defaults"), ("signal", "signal handlers"), ("path", "sys.path")]
)
def test_a_command_that_changes_a_setting_of_the_process_fails(which: str, named: str) -> None:
    import signal

    import torch

    dtype, handler, path = torch.get_default_dtype(), signal.getsignal(signal.SIGTERM), list(sys.path)
    try:
        with pytest.raises(AssertionError, match=f"changed: \\['{named}'\\]"):
            labs_here("settings", which)
    finally:
        torch.set_default_dtype(dtype)
        signal.signal(signal.SIGTERM, handler)
    assert sys.path == path  # put back by labs_here


@pytest.mark.parametrize("caught", [[], ["--caught"]])
def test_a_command_past_its_timeout_is_stopped(caught: list[str]) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match="still running after 1 s"):
        labs_here("hang", *caught, timeout=1)
    assert time.monotonic() - started < 10


def test_what_a_process_prints_to_stderr_is_on_stderr() -> None:
    exited = labs_here("text-exit")
    assert (exited.returncode, exited.stdout, exited.stderr) == (1, "", "error: told on stderr\n")
    warned = labs_here("warn")
    assert warned.stdout == "done\n" and "UserWarning: shown to a user" in warned.stderr
    assert (
        labs_here("log").stderr == "a record a user sees\n"
    )  # Python's last-resort handler, as in a process
    printed = labs_here("child-prints")
    assert (printed.stdout, printed.stderr) == ("from a child\n", "child err\n")


def test_an_exception_the_command_leaves_unhandled_fails_the_test() -> None:
    with pytest.raises(KeyError, match="never handled"):
        labs_here("crash")


def test_usage_errors_name_the_labs_command() -> None:
    wrong = labs_here("nonsense")
    assert wrong.returncode == 2 and "Usage: labs " in wrong.stderr
