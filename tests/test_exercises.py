"""Every exercise of every chapter: the reference answer passes, a wrong one fails,
"not attempted" is recognised, and nothing a learner types makes check() raise."""

import importlib
import pkgutil

import pytest
from hypothesis import given, settings, strategies as st

import trainium_lab.exercises as ex
from trainium_lab.exercises import Exercise


def all_exercises():
    out = []
    for info in pkgutil.iter_modules(ex.__path__):
        if info.name.startswith("ch"):
            module = importlib.import_module(f"trainium_lab.exercises.{info.name}")
            assert hasattr(module, "ALL"), f"{info.name} must define ALL"
            out += [pytest.param(q, id=f"{info.name}.{q.name}") for q in module.ALL]
    return out


EXERCISES = all_exercises()


@pytest.mark.parametrize("q", EXERCISES)
def test_reference_answer_is_accepted(q, capsys):
    q.check(q.expected)
    assert q.last.status == "correct", q.last.message
    assert capsys.readouterr().out.startswith("✅")


@pytest.mark.parametrize("q", EXERCISES)
def test_wrong_answer_is_rejected_with_hint(q, capsys):
    q.check(q.wrong)
    assert q.last.status == "wrong", f"{q.name}: wrong answer {q.wrong!r} was accepted"
    out = capsys.readouterr().out
    assert out.startswith("❌") and "Hint:" in out


@pytest.mark.parametrize("q", EXERCISES)
def test_solution_code_runs_and_is_the_answer(q):
    """The printed solution is executed: it is the answer's single source (or, for exercises
    not yet converted, it agrees with the legacy ``expected``)."""
    from trainium_lab.exercises import run_solution

    answer = run_solution(q._solution)
    q.check(answer)
    assert q.last.status == "correct", q.last.message


@pytest.mark.parametrize("q", EXERCISES)
def test_two_wrong_answers_are_rejected(q):
    """Every checker is tried with its reference (above) and at least two distinct wrong answers."""
    wrong = q.wrong_answers
    assert len(wrong) >= 2, f"{q.name}: only {len(wrong)} wrong answer(s) to test; add a mistake"
    for answer in wrong:
        assert q.judge(answer).status == "wrong", f"{q.name}: wrong answer {answer!r} was accepted"


@pytest.mark.parametrize("q", EXERCISES)
def test_every_mistake_gets_its_feedback(q):
    for mistake, feedback in q.mistakes:
        value = mistake() if callable(mistake) else mistake
        verdict = q.judge(value)
        assert verdict.status == "wrong" and feedback in verdict.message, (q.name, value)


def test_solution_must_assign_one_answer():
    from trainium_lab.exercises import run_solution

    assert run_solution("x = 3\nanswer_a = x * GiB / GiB") == 3
    with pytest.raises(RuntimeError, match="exactly one"):
        run_solution("x = 3")
    with pytest.raises(RuntimeError, match="exactly one"):
        run_solution("answer_1 = 1\nanswer_2 = 2")


@pytest.mark.parametrize("q", EXERCISES)
def test_not_attempted(q, capsys):
    q.check(...)
    assert q.last.status == "not attempted"
    q.check()
    assert q.last.status == "not attempted"


@pytest.mark.parametrize("q", EXERCISES)
def test_hint_and_solution_print(q, capsys):
    q.hint()
    q.solution()
    out = capsys.readouterr().out
    assert "💡" in out and "Solution" in out


ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                     st.text(max_size=5), st.lists(st.floats(), max_size=3),
                     st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@settings(max_examples=60, deadline=None)
@given(answer=ANYTHING)
def test_check_never_raises(answer):
    for param in EXERCISES:
        param.values[0].judge(answer)


def test_checker_exceptions_become_wrong_not_errors():
    def broken(answer, expected):
        raise RuntimeError("boom")

    q = Exercise("x", expected=lambda: 1.0, hint="h", solution="s", wrong=2.0, checker=broken)
    assert q.judge(1.0).status == "wrong"


def test_tolerance_and_types():
    q = Exercise("x", expected=lambda: 100.0, hint="h", solution="s", wrong=50.0, rel_tol=0.01)
    assert q.judge(100.9).status == "correct"
    assert q.judge(101.5).status == "wrong"
    assert "too high" in q.judge(101.5).message
    assert q.judge(float("nan")).status == "wrong"
    assert q.judge(True).status == "wrong"
    t = Exercise("t", expected=lambda: "HBM", hint="h", solution="s", wrong="SBUF")
    assert t.judge(" hbm ").status == "correct"
    b = Exercise("b", expected=lambda: False, hint="h", solution="s", wrong=True)
    assert b.judge(0).status == "wrong" and b.judge(False).status == "correct"
    s = Exercise("s", expected=lambda: (1.0, 2.0), hint="h", solution="s", wrong=(1.0, 3.0))
    assert s.judge([1.0, 2.0]).status == "correct" and s.judge((1.0,)).status == "wrong"


def test_wrong_defaults_to_the_first_mistake():
    """The likeliest mistake is written once: without ``wrong=`` it is the first of ``mistakes``."""
    q = Exercise("d", solution="answer = 2 * 2.0", hint="h",
                 mistakes=[(lambda: 2.0, "you forgot to double"), (8.0, "doubled twice")])
    assert q.wrong == 2.0
    assert q.judge(q.wrong).status == "wrong" and "you forgot to double" in q.judge(q.wrong).message
    assert Exercise("e", solution="answer = 1.0", hint="h", wrong=3.0, mistakes=[(2.0, "x")]).wrong == 3.0
    with pytest.raises(ValueError, match="mistakes"):
        Exercise("f", solution="answer = 1.0", hint="h")
