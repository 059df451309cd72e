"""The `labs` command, assembled: each command lives in :mod:`labs.commands` with the people who use it.

- :mod:`labs.commands.author`: `lint`, `check`, `new chapter`, `new lab` (docs/authoring.md);
- :mod:`labs.commands.run`: `run`, `run-merge` (CI: every notebook executed, shards merged);
- :mod:`labs.commands.instructor`: `release`, `collect`, `salt`; :mod:`labs.commands.grades`: `grade`,
  `feedback`, `export` (docs/grading.md);
- :mod:`labs.commands.student`: `lab`, `check-lab`;
- :mod:`labs.commands.hub`: `hub` (docs/hub.md);
- :mod:`labs.commands.common`: the option types and helpers several share.

Every command parses its options, makes one call into :mod:`labs` or :mod:`graders`, and prints what came back.
Commands import what they need when they run, so ``labs --help`` and a mistyped option answer at once.
"""

from __future__ import annotations

import typer

from labs.commands import author, grades, hub, instructor, run, student

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="PyTorch Labs: lint, run and check the course notebooks; release and grade labs.",
)
new_app = typer.Typer(
    no_args_is_help=True, help="Scaffold a chapter or a lab that follows docs/authoring.md."
)
app.add_typer(new_app, name="new")

new_app.command("chapter")(author.new_chapter)
new_app.command("lab")(author.new_lab)

# The order of `labs --help`.
app.command()(author.lint)
app.command()(run.run)
app.command("run-merge")(run.run_merge)
app.command()(author.check)
app.command()(instructor.release)
app.command()(instructor.collect)
app.command()(grades.grade)
app.command()(instructor.salt)
app.command("check-lab")(student.check_lab)
app.command()(grades.feedback)
app.command()(grades.export)
app.command()(student.lab)
app.command()(hub.hub)


def main() -> None:
    """Entry point for ``python -m labs.cli``."""
    app()


if __name__ == "__main__":
    main()
