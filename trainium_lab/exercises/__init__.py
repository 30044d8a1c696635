"""Self-checking exercises: ``q.check(answer)``, ``q.hint()``, ``q.solution()``.

``check`` prints one line, ✓ / ✗ (with a hint) / "not attempted", and never
raises, whatever it is given. Expected values are computed by the package's own
models from ``data/``, never typed in. Each chapter's exercises live in
``trainium_lab.exercises.chNN`` and every one is tested with its reference
answer and a wrong one.

>>> q = Exercise("double", expected=lambda: 4.0, hint="Multiply by two.",
...              solution="answer = 2 * 2", wrong=5.0)
>>> q.check(...)
➖ double: not attempted yet. Replace the ... with your answer.
>>> q.check(4.01)
✅ double: correct.
>>> q.check("four")
❌ double: expected a number, got str. Hint: Multiply by two.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Exercise", "CheckResult", "NOT_ATTEMPTED"]

NOT_ATTEMPTED = (Ellipsis, None)


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
    expected : callable
        Returns the reference answer (a number, a string, a bool or a tuple of
        those), computed by the package so no figure is typed in.
    hint, solution : str
        Shown by ``hint()`` and ``solution()``; the solution is code that
        produces the expected answer.
    wrong : object or callable
        A plausible wrong answer (or a function returning one); the test suite
        checks that it is rejected.
    rel_tol : float
        Relative tolerance for numbers (default 1 %, about how the sources round).
    unit : str
        Unit the answer is expected in, named in messages.
    checker : callable, optional
        ``checker(answer, expected) -> (ok, message)`` for answers a tolerance
        cannot judge.
    """

    def __init__(self, name: str, *, expected: Callable[[], Any], hint: str, solution: str,
                 wrong: Any, rel_tol: float = 0.01, unit: str = "",
                 checker: Callable[[Any, Any], tuple[bool, str]] | None = None):
        self.name = name
        self._expected = expected
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
        return CheckResult("wrong", f"❌ {self.name}: {why}. Hint: {self._hint}")

    def check(self, answer: Any = ...) -> None:
        """Print ✅ / ❌ with a hint / ➖ not attempted. Never raises."""
        self.last = self.judge(answer)
        print(self.last.message)

    def hint(self) -> None:
        """Print the hint."""
        print(f"💡 {self._hint}")

    def solution(self) -> None:
        """Print code that computes the answer."""
        print(f"Solution for {self.name}:\n{self._solution}")

    def __repr__(self) -> str:
        return f"Exercise({self.name!r})"


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
