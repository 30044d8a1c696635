#!/usr/bin/env python3
"""Regenerate ``requirements/lock.txt``: every package the course installs, transitive ones
included, at one version, resolved from the pins in ``pyproject.toml``.

    pip install uv && python3 tools/lock.py

Run it after changing a pin in ``pyproject.toml``. The lock is universal: markers for Linux,
macOS and Windows, and for every Python ``requires-python`` admits (3.11, 3.12, 3.13: resolved
from 3.11 up, a package forked by a ``python_full_version`` marker where they need different
versions); it covers the test, delivery and instructor extras. ``.venv`` (tools/course.py) and Binder (postBuild) both
install with it as a constraints file, so a learner gets tomorrow the versions that passed
today. ``tests/test_environment.py`` checks that it agrees with pyproject.toml and that the
environment under test is exactly what it says.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    uv = shutil.which("uv")
    if uv is None:
        print("uv is needed to resolve the lock: pip install uv", file=sys.stderr)
        return 2
    cmd = [uv, "pip", "compile", "pyproject.toml", "--extra", "test", "--extra", "delivery",
           "--extra", "instructor", "--universal", "--python-version", "3.11", "--annotation-style", "line",
           "--custom-compile-command", "python3 tools/lock.py", "-o", "requirements/lock.txt"]
    return subprocess.call(cmd, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main())
