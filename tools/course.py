#!/usr/bin/env python3
"""Set up the course's environment and open it, test it, or benchmark it.

    python3 tools/course.py lab     # set up .venv, open JupyterLab on chapter 00
    python3 tools/course.py test    # set up .venv, run every test (unit, doctests, nbval)
    python3 tools/course.py bench   # set up .venv, time widgets and models
    python3 tools/course.py execute # set up .venv, re-execute notebooks and store outputs
    python3 tools/course.py site    # set up .venv, build the static HTML site (build/site)

Standard library only, so it runs on a fresh machine with Python 3.11. The
environment is a virtualenv in ``.venv`` holding the course with its test and
delivery extras, every package at the version in ``requirements/lock.txt`` (the
lock Binder's postBuild installs from too, so a learner gets tomorrow what passed
today). It is brought up to date whenever ``pyproject.toml`` or the lock changes.
JupyterLab's settings overrides (``config/jupyterlab-overrides.json``: no news
prompt over the first chapter) are copied into the environment.

``test`` also needs a browser for tests/test_browser.py: Debian's ``chromium`` package. When it
is missing and this runs as root on a machine with apt-get (CI), it is installed; otherwise the
browser tests are skipped with a message saying how to install it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("TRAINIUM_LAB_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".trainium-lab-installed"
LOCK = ROOT / "requirements" / "lock.txt"
LAB_OVERRIDES = ROOT / "config" / "jupyterlab-overrides.json"
# jsonschema imports ~2 s slower in every kernel when this optional package is present
# (jsonschema PR 1521; see ../shared/reference/jupyter_stack_notes.md). Nothing here needs it.
SLOW_OPTIONAL = ["rfc3987-syntax"]


def log(msg: str) -> None:
    print(f"[course] {msg}", flush=True)


def run(cmd: list[str], **kw) -> None:
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def wanted_stamp() -> str:
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in (ROOT / "pyproject.toml", LOCK,
                                                                LAB_OVERRIDES))).hexdigest()
    return f"{digest} {sys.version_info[:2]}"


def ensure_python_311(argv: list[str]) -> None:
    """The pins are for Python 3.11: re-run this script under python3.11 if this is another."""
    if sys.version_info[:2] == (3, 11) or os.environ.get("TRAINIUM_LAB_ANY_PYTHON"):
        return
    other = shutil.which("python3.11") or shutil.which("py3.11")
    if other:
        log(f"this is Python {sys.version.split()[0]}; re-running with {other}")
        os.execv(other, [other, str(Path(__file__).resolve()), *argv])
    raise SystemExit(f"[course] Python 3.11 is needed (the pins in pyproject.toml are tested with it); "
                     f"this is {sys.version.split()[0]} and no python3.11 is on PATH. Install 3.11 "
                     "(python.org, your package manager, or `uv python install 3.11`) and run this "
                     "command with it.")


def ensure_env() -> None:
    """Create ``.venv`` if needed and install the pinned package with its test extras."""
    if not PY.exists():
        log(f"creating virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == wanted_stamp():
        return
    run([PY, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-c", LOCK,
         "-e", ".[test,delivery]"])
    run([PY, "-m", "pip", "uninstall", "--disable-pip-version-check", "-q", "-y", *SLOW_OPTIONAL])
    run([PY, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"])
    settings = VENV / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(LAB_OVERRIDES, settings / "overrides.json")
    STAMP.write_text(wanted_stamp())


CHROMIUM = Path("/usr/bin/chromium")


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def ensure_browser() -> bool:
    """Make sure Debian's chromium is installed for the browser tests; True if it is.

    Idempotent and instant when present. Installs it with apt-get only as root (CI runs as
    root on a clean machine); never downloads a browser any other way.
    """
    if CHROMIUM.exists():
        return True
    apt = shutil.which("apt-get")
    if not (is_root() and apt):
        log(f"{CHROMIUM} not found: the browser tests will be skipped "
            "(install it with: sudo apt-get install chromium)")
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run([apt, "update", "-q"], env=env)
    run([apt, "install", "-y", "-q", "--no-install-recommends", "chromium"], env=env)
    return CHROMIUM.exists()


def env_vars() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV)
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    return env


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"lab", "test", "bench", "execute", "site"}:
        print(__doc__)
        return 2
    what, rest = argv[0], argv[1:]
    ensure_python_311(argv)
    ensure_env()
    env = env_vars()
    if what == "lab":
        cmd = [BIN / "jupyter", "lab", "notebooks/00_start_here.ipynb", *rest]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        log(" ".join(str(c) for c in cmd))
        return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)
    if what == "test":
        ensure_browser()
        if is_root():
            env["TRAINIUM_LAB_REQUIRE_BROWSER"] = "1"  # CI: a missing browser is a failure
        workers = ["-n", "2", "--dist", "loadfile"] if (os.cpu_count() or 1) > 1 else []
        cmd = [PY, "-m", "pytest", *workers, *rest]
    elif what == "site":
        cmd = [PY, "tools/build_site.py", *rest]
    elif what == "bench":
        cmd = [PY, "tools/benchmark.py", *rest]
    else:
        cmd = [PY, "tools/execute_notebooks.py", *rest]
    log(" ".join(str(c) for c in cmd))
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
