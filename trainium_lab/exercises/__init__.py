"""Self-checking exercises: ``q.check(answer)``, ``q.hint()``, ``q.solution()``.

``check`` prints one line, ✓ / ✗ (with a hint) / "not attempted", and never
raises, whatever it is given. The solution is the single source of the expected
answer: it is code that shows the arithmetic, and the reference answer is what
running it assigns to ``answer`` (or one ``answer_<name>``). It runs with the
package's model modules, the ``units`` constants, ``math`` and ``np`` in scope,
exactly as a chapter's setup cell provides them. Each chapter's exercises live
in ``trainium_lab.exercises.chNN`` and every one is tested with its reference
answer and a wrong one.

>>> q = Exercise("double", solution="answer_1 = 2 * 2.0", hint="Multiply by two.",
...              wrong=5.0, mistakes=[(2.0, "you forgot to double")])
>>> q.expected
4.0
>>> q.check(...)
➖ double: not attempted yet. Replace the ... with your answer.
>>> q.check(4.01)
✅ double: correct.
>>> q.check(2.0)
❌ double: 2 is too low: you forgot to double. Hint: Multiply by two.
>>> q.check("four")
❌ double: expected a number, got str. Hint: Multiply by two.
"""

from __future__ import annotations

import functools
import importlib
import math
import numbers
import pkgutil
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Exercise", "CheckResult", "NOT_ATTEMPTED", "run_solution", "solution_namespace",
           "hide_solutions"]

NOT_ATTEMPTED = (Ellipsis, None)
#: graded copies (tools/instructor.py) turn ``solution()`` off: see :func:`hide_solutions`
_SOLUTIONS = {"shown": True}
_ANSWER_NAME = re.compile(r"^answer(_\w+)?$")
#: package modules that are not models, so a solution has no use for them
_NOT_MODELS = {"charts", "widgets", "exercises", "notebook", "cli", "views", "diagrams"}


@functools.cache
def _model_modules() -> dict[str, Any]:
    import trainium_lab

    out = {}
    for info in pkgutil.iter_modules(trainium_lab.__path__):
        if info.name.startswith("_") or info.name in _NOT_MODELS:
            continue
        out[info.name] = importlib.import_module(f"trainium_lab.{info.name}")
    return out


def solution_namespace() -> dict[str, Any]:
    """What a solution may use: the model modules, the ``units`` constants, ``math``, ``np``."""
    import numpy as np

    from trainium_lab import units

    ns: dict[str, Any] = {"math": math, "np": np}
    ns.update({k: v for k, v in vars(units).items() if not k.startswith("_")})
    ns.update(_model_modules())
    return ns


def hide_solutions(hidden: bool = True) -> None:
    """Make every exercise's ``solution()`` print a notice instead of the code (graded copies).

    >>> q = Exercise("double", solution="answer_1 = 2 * 2.0", hint="Two.", wrong=5.0)
    >>> hide_solutions(); q.solution(); hide_solutions(False)
    Solution for double: not shown in a graded copy (your instructor releases it after grading).
    """
    _SOLUTIONS["shown"] = not hidden


def run_solution(code: str) -> Any:
    """Run a solution's code and return the one ``answer`` / ``answer_<name>`` it assigns."""
    ns = solution_namespace()
    before = set(ns)
    exec(compile(code, "<solution>", "exec"), ns)  # noqa: S102 - the package's own code
    names = [k for k in ns if k not in before and _ANSWER_NAME.match(k)]
    if len(names) != 1:
        raise RuntimeError(f"a solution must assign exactly one answer variable; found {names}")
    return ns[names[0]]


@dataclass(frozen=True)
class CheckResult:
    """What the last ``check`` decided: ``status`` is "correct", "wrong" or "not attempted"."""

    status: str
    message: str


class Exercise:
    """One exercise with a computed reference answer.

    Parameters
    ----------
    name : str
        Short label printed with every verdict.
    solution : str
        Code that shows the arithmetic with units and assigns the answer to
        ``answer`` or ``answer_<name>``; running it gives the reference answer
        (a number, a string, a bool or a tuple of those). Printed by ``solution()``.
    hint : str
        Shown by ``hint()`` and after a wrong answer.
    wrong : object or callable, optional
        A plausible wrong answer (or a function returning one); the test suite
        checks that it is rejected. Default: the first of ``mistakes``, so the
        likeliest mistake is written once.
    mistakes : sequence of (answer or callable, str), optional
        Likely mistakes and the feedback aimed at each ("you used GB where GiB
        was asked"); an answer matching one (within ``rel_tol``) gets that
        feedback. Required when ``wrong`` is not given.
    expected : callable, optional
        Deprecated second source of the answer, kept only for exercises not yet
        converted; when given, a test checks that it agrees with the solution.
    rel_tol : float
        Relative tolerance for numbers (default 1 %, about how the sources round).
    unit : str
        Unit the answer is expected in, named in messages.
    checker : callable, optional
        ``checker(answer, expected) -> (ok, message)`` for answers a tolerance
        cannot judge.
    open_variant : bool
        True for an open problem (a chapter's chained problem again, for another
        model or system) whose ``checker`` accepts any defensible answer and
        rejects the classic wrong ones with feedback; ``tests/test_chained_problems.py``
        counts at least one per chapter.
    also_accepted : sequence, optional
        For an open variant: defensible answers other than the reference (or
        callables returning one, where a model decides it), which the tests check
        the checker accepts.
    """

    def __init__(self, name: str, *, hint: str, solution: str, wrong: Any = None,
                 expected: Callable[[], Any] | None = None,
                 mistakes: Sequence[tuple[Any, str]] = (), rel_tol: float = 0.01, unit: str = "",
                 checker: Callable[[Any, Any], tuple[bool, str]] | None = None,
                 open_variant: bool = False, also_accepted: Sequence[Any] = ()):
        self.name = name
        self.open_variant = bool(open_variant)
        self.also_accepted = tuple(also_accepted)
        if self.open_variant and checker is None:
            raise ValueError(f"{name}: an open variant needs a checker= that accepts any defensible answer")
        self._legacy_expected = expected
        self._expected = expected if expected is not None else functools.cache(
            lambda: run_solution(solution))
        self.mistakes = tuple(mistakes)
        if wrong is None:
            if not self.mistakes:
                raise ValueError(f"{name}: give wrong= or at least one of mistakes=")
            wrong = self.mistakes[0][0]
        self._hint = hint
        self._solution = solution
        self._wrong = wrong
        self.rel_tol = rel_tol
        self.unit = unit
        self._checker = checker
        self.last: CheckResult | None = None

    @property
    def wrong(self) -> Any:
        """A plausible wrong answer, used by the tests."""
        return self._wrong() if callable(self._wrong) else self._wrong

    @property
    def expected(self) -> Any:
        """The reference answer, computed now from the package."""
        return self._expected()

    @property
    def wrong_answers(self) -> list[Any]:
        """Every plausible wrong answer the tests try: ``wrong`` and each of ``mistakes``."""
        out = [self.wrong]
        for mistake, _ in self.mistakes:
            value = mistake() if callable(mistake) else mistake
            if not any(value is w or _same(value, w) for w in out):
                out.append(value)
        return out

    def judge(self, answer: Any) -> CheckResult:
        """Decide without printing. Never raises."""
        if any(answer is marker for marker in NOT_ATTEMPTED):
            return CheckResult("not attempted",
                               f"➖ {self.name}: not attempted yet. Replace the ... with your answer.")
        try:
            expected = self._expected()
            if self._checker is not None:
                ok, why = self._checker(answer, expected)
            else:
                ok, why = _compare(answer, expected, self.rel_tol, self.unit)
        except Exception as exc:  # a checker must never raise into a learner's notebook
            ok, why = False, f"could not check this answer ({type(exc).__name__}: {exc})"
        if ok:
            return CheckResult("correct", f"✅ {self.name}: correct.")
        extra = self._diagnose(answer)
        if extra[2:] not in why:  # a checker may already have named the mistake
            why += extra
        return CheckResult("wrong", f"❌ {self.name}: {why}. Hint: {self._hint}")

    def _diagnose(self, answer: Any) -> str:
        """Feedback for a recognised mistake (": you forgot the ring's factor 2"), or ""."""
        for mistake, feedback in self.mistakes:
            try:
                value = mistake() if callable(mistake) else mistake
                hit, _ = _compare(answer, value, self.rel_tol, self.unit)
            except Exception:  # a mistake that cannot be compared is not this one
                hit = False
            if hit:
                return f": {feedback}"
        return ""

    def check(self, answer: Any = ...) -> None:
        """Print ✅ / ❌ with a hint / ➖ not attempted. Never raises."""
        self.last = self.judge(answer)
        print(self.last.message)

    def hint(self) -> None:
        """Print the hint."""
        print(f"💡 {self._hint}")

    @property
    def solution_code(self) -> str:
        """The solution's code (it assigns ``answer`` or ``answer_<name>``)."""
        return self._solution

    def solution(self) -> None:
        """Print code that computes the answer (a notice instead in a graded copy)."""
        if not _SOLUTIONS["shown"]:
            print(f"Solution for {self.name}: not shown in a graded copy "
                  "(your instructor releases it after grading).")
            return
        print(f"Solution for {self.name}:\n{self._solution}")

    def __repr__(self) -> str:
        return f"Exercise({self.name!r})"


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # arrays and odd types: treat as different
        return False


def _is_number(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _compare(answer: Any, expected: Any, rel_tol: float, unit: str) -> tuple[bool, str]:
    unit_text = f" {unit}" if unit else ""
    if isinstance(expected, bool):
        if not isinstance(answer, bool):
            return False, f"expected True or False, got {type(answer).__name__}"
        return answer == expected, "not quite"
    if _is_number(expected):
        if not _is_number(answer):
            return False, f"expected a number{unit_text}, got {type(answer).__name__}"
        if not math.isfinite(float(answer)):
            return False, f"expected a finite number{unit_text}, got {answer}"
        exp = float(expected)
        if math.isclose(float(answer), exp, rel_tol=rel_tol, abs_tol=1e-12 if exp == 0 else 0.0):
            return True, ""
        direction = "too high" if float(answer) > exp else "too low"
        return False, f"{answer:g}{unit_text} is {direction}"
    if isinstance(expected, str):
        if not isinstance(answer, str):
            return False, f"expected text, got {type(answer).__name__}"
        return answer.strip().lower() == expected.strip().lower(), f"{answer!r} is not it"
    if isinstance(expected, Sequence):
        if not isinstance(answer, Sequence) or isinstance(answer, str) or len(answer) != len(expected):
            return False, f"expected {len(expected)} values"
        for a, e in zip(answer, expected):
            ok, why = _compare(a, e, rel_tol, unit)
            if not ok:
                return False, why
        return True, ""
    return answer == expected, "not quite"
