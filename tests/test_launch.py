"""labutils.launch: real ranks, results per rank, failures, timeouts, interrupts, no orphans."""

from __future__ import annotations

import linecache
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

from labutils.launch import LaunchTimeoutError, RankFailedError, choose_backend, launch, run_cell
from labutils.launch.procs import KERNEL_PID_ENV, PrefixedLines
from labutils.launch.ship import ShipError, module_source, ship
from labutils.launch.zygote import zygote_pid

# --- functions the ranks import by name (this module is importable from the ranks) -------------


def rank_report(x: torch.Tensor) -> dict:
    """Each rank scales ``x`` by rank+1 and all-reduces it; reports what it saw."""
    y = x * (dist.get_rank() + 1)
    dist.all_reduce(y)
    print(f"hello from {dist.get_rank()}")
    return {
        "rank": dist.get_rank(),
        "world": dist.get_world_size(),
        "sum": y,
        "omp": os.environ.get("OMP_NUM_THREADS"),
        "tmp": os.environ.get("TMPDIR"),
        "backend": dist.get_backend(),
        "pid": os.getpid(),
    }


def fail_on_rank_one() -> int:
    """Rank 1 raises while rank 0 waits in a collective that will never complete."""
    if dist.get_rank() == 1:
        raise ValueError("boom from rank 1")
    dist.all_reduce(torch.ones(1))
    return 0


def hang_with_grandchild(marker: str) -> None:
    """Start a grandchild in its own session (escaping the tree), then block forever."""
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    Path(f"{marker}.{dist.get_rank()}").write_text(str(child.pid))
    time.sleep(600)


def leftovers(owner_pid: int) -> list[psutil.Process]:
    """Live processes started by runs of process ``owner_pid`` (its long-lived zygote excepted)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.pid == zygote_pid():
                continue
            if proc.environ().get(KERNEL_PID_ENV) == str(owner_pid) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def notebook_function(source: str, name: str, extra_globals: dict | None = None):
    """Define a function the way a Jupyter cell does: module ``__main__``, source in linecache."""
    filename = f"<ipython-cell-{name}-{time.monotonic_ns()}>"
    source = textwrap.dedent(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": "__main__", **(extra_globals or {})}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


# --- fast unit tests ----------------------------------------------------------------------------


def test_choose_backend_on_this_machine() -> None:
    expected = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= 2 else "gloo"
    assert choose_backend("auto", "auto", 2) == expected
    assert choose_backend("gloo", "cpu", 2) == "gloo"
    with pytest.raises(ValueError, match="backend"):
        choose_backend("mpi", "cpu", 2)
    if torch.cuda.device_count() < 64:
        with pytest.raises(ValueError, match="one GPU per rank"):
            choose_backend("nccl", "cuda", 64)


def test_prefixed_lines_reassembles_split_chunks() -> None:
    import io

    out = io.StringIO()
    lines = PrefixedLines("[rank 3] ", lambda: out)
    for chunk in (b"hel", b"lo\nwor", b"ld\n", b"tail"):
        lines.feed(chunk)
    assert out.getvalue() == "[rank 3] hello\n[rank 3] world\n"
    lines.close()
    assert out.getvalue().splitlines() == ["[rank 3] hello", "[rank 3] world", "[rank 3] tail"]
    assert lines.tail.endswith("tail\n")


def test_module_source_ships_imports_constants_and_helpers() -> None:
    helper = notebook_function(
        """
        def helper(t):
            return t * SCALE
    """,
        "helper",
        {"SCALE": 3},
    )
    main = notebook_function(
        """
        def main_fn(n):
            return helper(torch.ones(n)).sum() + len(NAMES) + int(fully_shard is not None)
    """,
        "main_fn",
        {"helper": helper, "torch": torch, "NAMES": ("a", "b"), "fully_shard": fully_shard},
    )
    source = module_source(main)
    assert "import torch" in source and "SCALE = 3" in source and "NAMES = ('a', 'b')" in source
    assert "from torch.distributed.fsdp" in source and "def helper" in source
    namespace: dict = {}
    exec(compile(source, "<shipped>", "exec"), namespace)
    assert namespace["main_fn"](4).item() == main(4).item() == 12 + 2 + 1


def test_names_in_type_hints_need_not_travel_and_defaults_do() -> None:
    hinted = notebook_function(
        """
        def hinted(n: int, dtype=torch.float64) -> torch.Tensor:
            return math.sqrt(n) * TWO
    """,
        "hinted",
        {"torch": torch, "math": math, "TWO": 2},
    )
    source = module_source(hinted)
    assert "import torch" in source  # the default value is evaluated where the def runs
    namespace: dict = {}
    exec(compile(source, "<shipped>", "exec"), namespace)
    assert namespace["hinted"](9) == 6.0
    hint_only = notebook_function(
        """
        def hint_only(x: torch.Tensor) -> torch.Tensor:
            return x
    """,
        "hint_only",
        {"torch": torch},
    )
    assert "import torch" not in module_source(hint_only)
    namespace = {}
    exec(compile(module_source(hint_only), "<shipped>", "exec"), namespace)
    assert namespace["hint_only"](5) == 5


def test_ship_refuses_unshippable_globals(tmp_path: Path) -> None:
    uses_tensor = notebook_function(
        """
        def uses_tensor():
            return WEIGHTS.sum()
    """,
        "uses_tensor",
        {"WEIGHTS": torch.ones(3)},
    )
    with pytest.raises(ShipError, match="WEIGHTS"):
        ship(uses_tensor, tmp_path)
    assert ship(rank_report, tmp_path).path is None  # importable: travels by name


# --- real ranks ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False], ids=["forked-by-zygote", "fresh-interpreters"])
def test_launch_returns_each_ranks_result_and_cleans_up(
    capfd: pytest.CaptureFixture[str], warm: bool
) -> None:
    x = torch.arange(3.0)
    results = launch(rank_report, 2, x, timeout=120, warm=warm)
    assert [r["rank"] for r in results] == [0, 1]
    for r in results:
        torch.testing.assert_close(
            r["sum"], x * 3, msg="all_reduce of x*1 and x*2 should be 3x on every rank"
        )
        assert r["world"] == 2 and r["omp"] == "1" and r["backend"] == choose_backend("auto", "auto", 2)
        assert not Path(r["tmp"]).exists(), "the run's temporary folder should be deleted"
    assert results[0]["pid"] != results[1]["pid"] != os.getpid(), "each rank is its own process"
    out = capfd.readouterr().out
    assert "[rank 0] hello from 0" in out and "[rank 1] hello from 1" in out
    assert leftovers(os.getpid()) == []


@pytest.mark.slow
def test_launch_ships_a_notebook_function() -> None:
    scale = notebook_function(
        """
        def scale(t):
            return t * (dist.get_rank() + FACTOR)
    """,
        "scale",
        {"dist": dist, "FACTOR": 10},
    )
    gathered = notebook_function(
        """
        def gathered(n):
            out = [torch.zeros(n) for _ in range(dist.get_world_size())]
            dist.all_gather(out, scale(torch.ones(n)))
            return torch.stack(out)
    """,
        "gathered",
        {"dist": dist, "torch": torch, "scale": scale},
    )
    results = launch(gathered, 2, 3, timeout=120)
    expected = torch.tensor([[10.0] * 3, [11.0] * 3])
    for r in results:
        torch.testing.assert_close(r, expected)


@pytest.mark.slow
def test_failing_rank_becomes_an_error_with_its_traceback() -> None:
    start = time.monotonic()
    with pytest.raises(RankFailedError) as info:
        launch(fail_on_rank_one, 2, timeout=120)
    assert info.value.rank == 1
    message = str(info.value)
    assert "ValueError: boom from rank 1" in message and "fail_on_rank_one" in message
    assert "launch_worker" not in message, "the launcher's own frames should be trimmed"
    assert time.monotonic() - start < 100, "rank 0 must not wait for gloo's own timeout"
    assert leftovers(os.getpid()) == []


@pytest.mark.slow
def test_timeout_kills_every_rank_and_their_children(tmp_path: Path) -> None:
    marker = str(tmp_path / "grandchild")
    launch(rank_report, 2, torch.ones(1), timeout=120)  # the zygote is warm: the ranks start at once
    with pytest.raises(LaunchTimeoutError):
        launch(hang_with_grandchild, 2, marker, timeout=8)
    assert len(list(tmp_path.glob("grandchild.*"))) == 2, "both ranks should have started their grandchild"
    assert leftovers(os.getpid()) == []
    for path in tmp_path.glob("grandchild.*"):
        pid = int(path.read_text())
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
def test_two_runs_at_once_do_not_collide() -> None:
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def run(key: int) -> None:
        try:
            results[key] = launch(rank_report, 2, torch.full((2,), float(key)), timeout=180)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(key,)) for key in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for key in (1, 2):
        torch.testing.assert_close(results[key][1]["sum"], torch.full((2,), 3.0 * key))


# --- %%torchrun -------------------------------------------------------------------------------------

CELL = """
import os
import torch, torch.distributed as dist
dist.init_process_group(BACKEND)
x = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(x)
print(f"sum={x.item()} rank={os.environ['RANK']} local={os.environ['LOCAL_RANK']} steps={STEPS} device={DEVICE}")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_magic_streams_prefixed_output(capfd: pytest.CaptureFixture[str]) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "labutils")
    shell.user_ns["STEPS"] = 7
    shell.run_cell_magic("torchrun", "-n 2 --timeout 120 --device cpu --vars STEPS", CELL)
    out = capfd.readouterr().out
    assert "[rank 0] sum=3.0 rank=0 local=0 steps=7 device=cpu" in out
    assert "[rank 1] sum=3.0 rank=1 local=1 steps=7 device=cpu" in out
    assert leftovers(os.getpid()) == []


@pytest.mark.slow
def test_torchrun_failure_carries_the_cell_traceback() -> None:
    cell = "import torch.distributed as dist\ndist.init_process_group(BACKEND)\nif dist.get_rank() == 1:\n    1 / 0\ndist.barrier()\n"
    with pytest.raises(RankFailedError) as info:
        run_cell(cell, 2, timeout=120)
    assert info.value.rank == 1
    assert "ZeroDivisionError" in str(info.value) and "<%%torchrun cell>, line 4" in str(info.value)
    assert leftovers(os.getpid()) == []


DRIVER = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # not an ignore inherited from the test process
from labutils.launch import run_cell
cell = '''
import time, pathlib, torch.distributed as dist
dist.init_process_group(BACKEND)
pathlib.Path(MARKER + "." + str(dist.get_rank())).write_text("started")
time.sleep(600)
'''
try:
    run_cell(cell, 2, timeout=500, variables={"MARKER": sys.argv[1]})
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(42)
"""


@pytest.mark.slow
def test_keyboard_interrupt_kills_every_rank(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(marker)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 150
    while len(list(tmp_path.glob("started.*"))) < 2 and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.2)
    assert len(list(tmp_path.glob("started.*"))) == 2, "both ranks should have started"
    assert len(leftovers(driver.pid)) >= 3, "torchrun and two ranks should be running"
    driver.send_signal(signal.SIGINT)
    out, _ = driver.communicate(timeout=60)
    assert driver.returncode == 42 and "interrupted" in out
    assert leftovers(driver.pid) == []


@pytest.mark.slow
def test_zygote_exits_with_its_client_and_takes_no_rank_along(tmp_path: Path) -> None:
    script = (
        "import sys, torch\n"
        "from labutils.launch import launch\n"
        "from labutils.launch.zygote import zygote_pid\n"
        "from test_launch import rank_report\n"
        "launch(rank_report, 2, torch.ones(1), timeout=120)\n"
        "print(zygote_pid(), flush=True)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=180
    )
    assert done.returncode == 0, done.stderr
    zygote = int(done.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 10
    while psutil.pid_exists(zygote) and psutil.Process(zygote).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the zygote should exit when its client does"
        time.sleep(0.1)


def test_forked_rank_exit_code_comes_from_its_exit_file_only(tmp_path: Path) -> None:
    """A rank whose pid /proc does not show is still running until the zygote writes its exit file."""
    from zygote.client import ForkedChild

    zygote = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        rank = ForkedChild(gone.pid, tmp_path / "rank0.exit", lambda: zygote.poll() is None)
        assert rank.poll() is None
        (tmp_path / "rank0.exit").write_text("3")
        assert rank.poll() == 3
        zygote.kill()
        zygote.wait()
        assert ForkedChild(gone.pid, tmp_path / "rank1.exit", lambda: zygote.poll() is None).poll() == -9
    finally:
        zygote.kill()
        zygote.wait()
