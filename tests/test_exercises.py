"""labutils.exercises: the lesson self-checks say right, not yet or not answered, and never raise."""

import torch

from labutils import exercises


def test_check_verdicts(capsys):
    assert exercises.check("q", True, True, why="because")
    assert "[q] right: because" in capsys.readouterr().out
    assert not exercises.check("q", False, True, why="because")
    assert "not yet: you said False, the experiment says True" in capsys.readouterr().out
    assert not exercises.check("q", ..., True, why="because")
    assert "not answered yet" in capsys.readouterr().out


def test_the_outcome_is_truthy_and_displays_nothing(capsys):
    outcome = exercises.check("q", 1, 1, why="")
    assert bool(outcome) and hasattr(outcome, "_ipython_display_") and outcome._ipython_display_() is None


def test_same_is_strict_where_it_matters():
    assert not exercises.same(1, True) and not exercises.same(True, 1)
    assert exercises.same(0.1 + 0.2, 0.3)
    assert (
        exercises.same((2, 3), (2, 3)) and exercises.same([2, 3], (2, 3)) and not exercises.same((2,), (2, 3))
    )
    assert exercises.same(torch.ones(2), torch.ones(2))
    assert not exercises.same(torch.ones(2), torch.ones(2, dtype=torch.float64))
    assert not exercises.same(torch.ones(2), torch.ones(1, 2))
    assert not exercises.same([1, 2], torch.ones(2))


def test_check_function_reports_first_miss_and_errors(capsys):
    cases = [((2,), 4), ((3,), 9)]
    assert exercises.check_function("sq", lambda n: n * n, cases, why="n squared")
    assert "right on all 2 cases" in capsys.readouterr().out

    def plus(n):
        return n + n

    assert not exercises.check_function("sq", plus, cases, why="n squared")
    assert "plus(3) returned 6, expected 9" in capsys.readouterr().out

    def todo(n):
        raise NotImplementedError

    assert not exercises.check_function("sq", todo, cases, why="")
    assert "not answered yet" in capsys.readouterr().out
    assert not exercises.check_function("sq", lambda n: 1 / 0, cases, why="")
    assert "raised ZeroDivisionError" in capsys.readouterr().out
