"""The docs' examples execute: every fenced block of docs/authoring.md and docs/grading.md is run
(python), run or parsed by the CLI (bash: `labs ...` lines), or declared text; a block marked
``<!-- fragment -->`` is a shape to copy and skipped; one marked ``<!-- walkthrough -->`` is run as
written, shell lines and all, by tests/test_new_instructor.py."""

from __future__ import annotations

import re
import shlex
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import typer

from graders.boundary.job_result import first_unplain
from graders.inside.probing import Draw, load_probes, to_plain
from labs.cli import app
from tests.conftest import ROOT
from tests.inprocess import labs_here

DOCS = [ROOT / "docs" / "authoring.md", ROOT / "docs" / "grading.md"]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>\w*)[ \t]*$")
FRAGMENT = "<!-- fragment -->"
WALKTHROUGH = "<!-- walkthrough -->"
CHAPTER = "06_tricks"  # what the docs' NN_topic placeholders stand for here
RUN_FOR_REAL = ("labs new ", "labs lint ")  # cheap enough to run on the scaffold; the rest is parsed
EXERCISES = {
    "softplus": torch.nn.functional.softplus
}  # the docs' example exercises, as a student would solve them


@dataclass(frozen=True)
class Block:
    """One fenced block of a doc: its language, dedented text, line, and whether it is marked a fragment."""

    doc: Path
    line: int
    lang: str
    text: str
    fragment: bool
    walkthrough: bool = False


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of ``doc``, in order."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        previous = next((line.strip() for line in reversed(lines[:i]) if line.strip()), "")
        body = textwrap.dedent("\n".join(lines[i + 1 : end]))
        found.append(Block(doc, i + 1, opened["lang"], body, previous == FRAGMENT, previous == WALKTHROUGH))
        i = end + 1
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]


def _commands(block: Block) -> list[list[str]]:
    lines = (line.split("#", 1)[0].strip() for line in block.text.splitlines())
    return [shlex.split(line.replace("NN_topic", CHAPTER)) for line in lines if line]


def _parses(args: list[str]) -> None:
    """``labs ARGS`` as the CLI would parse it (options, arguments, subcommands), without running it."""
    command = typer.main.get_command(app)
    ctx = command.make_context("labs", list(args))
    while _is_group(command) and _pending(ctx):
        name, command, rest = command.resolve_command(ctx, _pending(ctx))
        ctx = command.make_context(name, rest, parent=ctx)
    assert not _is_group(command), f"labs {' '.join(args)}: no subcommand"


def _is_group(command: object) -> bool:
    return hasattr(command, "resolve_command")  # typer may bring a click of its own: no isinstance


def _pending(ctx: Any) -> list[str]:
    """What a group left for its subcommand (click 8.2 renamed ``protected_args``)."""
    return [*getattr(ctx, "_protected_args", getattr(ctx, "protected_args", [])), *ctx.args]


def _run_bash(block: Block, workdir: Path) -> None:
    for args in _commands(block):
        assert args[0] == "labs", (
            f"{block.doc.name}:{block.line}: only `labs` commands are checked, got {args}"
        )
        if " ".join(args).startswith(RUN_FOR_REAL):
            result = labs_here(*args[1:], cwd=workdir)
            assert result.returncode == 0, (
                f"{block.doc.name}:{block.line}: {args}\n{result.stdout}{result.stderr}"
            )
        else:
            _parses(args[1:])


def _run_python(block: Block, namespace: dict) -> None:
    if "@probe(" in block.text:
        for grade_id, found in load_probes(block.text, f"{block.doc.name}:{block.line}").items():
            observed = to_plain(found.fn(dict(EXERCISES), Draw(0, grade_id)))
            assert first_unplain(observed) is None, (
                f"{block.doc.name}:{block.line}: {grade_id} returns {observed}"
            )
    else:
        exec(compile(block.text, f"{block.doc.name}:{block.line}", "exec"), namespace)


def test_every_block_says_what_it_is():
    unmarked = [f"{b.doc.name}:{b.line}" for b in ALL if b.lang not in ("python", "bash", "text")]
    assert not unmarked, f"give these blocks a language (python, bash or text): {unmarked}"


def test_the_docs_examples_execute(tmp_path: Path, capsys: pytest.CaptureFixture):
    executed = 0
    for doc in DOCS:
        namespace: dict = {}  # a doc's python blocks run in order, like a notebook's cells
        for block in blocks(doc):
            if block.fragment or block.walkthrough or block.lang == "text":
                continue
            if block.lang == "python":
                _run_python(block, namespace)
            else:
                _run_bash(block, tmp_path)
            executed += 1
    assert executed >= 7, executed
    assert (tmp_path / "course" / CHAPTER / "lab_tricks.ipynb").is_file()


def test_fragments_are_few_and_marked():
    fragments = [b for b in ALL if b.fragment]
    assert 0 < len(fragments) < len(ALL) / 3
    assert all(b.lang == "python" for b in fragments)


CITED_DOC = re.compile(
    r"\b((?:docs|ci|labs|graders|labutils|zygote|benchmarks|tests)/[\w./-]+\.(?:md|py|yml|yaml|json|sh))\b"
)


def _citing_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for package in ("labutils", "graders", "labs", "zygote", "benchmarks", "course", "ci"):
        files += sorted(
            p for p in (ROOT / package).rglob("*") if p.suffix in (".py", ".ipynb", ".md", ".yml", ".yaml")
        )
    return files


def test_every_file_a_doc_or_module_cites_exists():
    """A path like ``docs/design.md`` or ``graders/coursedir.py`` named in a doc, a module or a notebook is there."""
    missing = {}
    for path in _citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        gone = sorted(
            {
                m
                for m in CITED_DOC.findall(text)
                if "<" not in m
                and "*" not in m
                and not (ROOT / m).exists()
                and not (path.parent / m).exists()
            }
        )
        if gone:
            missing[path.relative_to(ROOT).as_posix()] = gone
    assert missing == {}
