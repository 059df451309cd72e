"""`labs hub`: a class on JupyterHub on one machine (docs/hub.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graders import paths as defaults
from labs.commands.common import CourseOpt
from labs.console import console, fail
from labs.hub.plan import CULL_IDLE, Limits


def hub(
    port: Annotated[int, typer.Option(help="JupyterHub's port")] = 8000,
    root: Annotated[Path, typer.Option("--root", help="homes, exchange, config and state of the class")] = (
        defaults.HUB_ROOT
    ),
    class_list: Annotated[
        Path | None,
        typer.Option(
            "--class",
            help="the class list: a CSV of name and optional email, one person a line (instead of --student)",
        ),
    ] = None,
    instructor: Annotated[
        str, typer.Option(help="the instructor's user name (admin, formgrader)")
    ] = "instructor",
    student: Annotated[
        list[str] | None, typer.Option("--student", help="a student's user name (repeat; default: ada, ben)")
    ] = None,
    grading: Annotated[
        Path, typer.Option(help="the course's nbgrader folder, the instructor's (labs release/grade --root)")
    ] = defaults.GRADING_ROOT,
    course_dir: CourseOpt = defaults.COURSE,
    proxy: Annotated[
        Path | None, typer.Option(help="configurable-http-proxy (default: build/node, then PATH)")
    ] = None,
    ip: Annotated[
        str, typer.Option(help="the address it listens on (0.0.0.0: every interface; use --https)")
    ] = ("127.0.0.1"),
    https: Annotated[
        tuple[Path, Path] | None,
        typer.Option("--https", help="serve HTTPS with this certificate and key (PEM files)"),
    ] = None,
    memory: Annotated[
        float | None,
        typer.Option(
            help="GiB of memory per student, all their processes together "
            "(default: a share of 80% of the RAM, 1 to 4 GiB)"
        ),
    ] = None,
    cpus: Annotated[
        float | None, typer.Option(help=f"cores per student, a CPU quota (default: {Limits.cpus:g})")
    ] = None,
    processes: Annotated[
        int | None, typer.Option(help=f"processes and threads per student (default: {Limits.processes})")
    ] = None,
    disk: Annotated[
        float | None,
        typer.Option(
            help="GiB of disk per student: their home a filesystem of its own, "
            "and the exchange one of 32 MiB a person (default: 2, or a share "
            "of half the free disk; 0: homes on the host's, unlimited)"
        ),
    ] = None,
    cull_idle: Annotated[
        int, typer.Option(help="stop a server idle this many seconds (0: never)")
    ] = CULL_IDLE,
    subdomain_host: Annotated[
        str | None,
        typer.Option(
            "--subdomain-host",
            help="each server on an origin of its own, <name>.HOST: a URL http(s)://HOST[:PORT] "
            "(a wildcard DNS record; for HTTPS a wildcard certificate), localhost (http://localhost:PORT) or off "
            "(default: localhost on 127.0.0.1 over HTTP, else off)",
        ),
    ] = None,
    demo: Annotated[
        bool,
        typer.Option(
            "--demo",
            help="no accounts: any password, every server as this unix "
            "user (a demo on one machine, not a class)",
        ),
    ] = False,
    remove_class: Annotated[
        bool,
        typer.Option(
            "--remove-class",
            help="remove the class made under --root: its "
            "unix users, cgroups and folder (homes included), then exit",
        ),
    ] = False,
    config_only: Annotated[
        bool, typer.Option("--config-only", help="write jupyterhub_config.py and exit")
    ] = False,
) -> None:
    """A class on JupyterHub: a unix user per person, sign-in, per-student limits, nbgrader's exchange."""
    from labs.hub.run import ClassNotPossible, HubDidNotStart, class_plan, run_class

    try:
        plan = class_plan(
            port,
            root,
            instructor,
            grading,
            proxy,
            class_list=class_list,
            students=student,
            course=course_dir,
            ip=ip,
            https=https,
            memory_gib=memory,
            cpus=cpus,
            processes=processes,
            disk_gib=disk,
            cull_idle=cull_idle,
            subdomain_host=subdomain_host,
            demo=demo,
        )
    except ValueError as err:
        fail(str(err))
    try:
        raise typer.Exit(run_class(plan, console.print, remove=remove_class, config_only=config_only))
    except (ClassNotPossible, HubDidNotStart) as err:
        fail(str(err))
