#!/usr/bin/env python3
"""Set up the course's environment and open it, test it, or benchmark it.

    python3 tools/course.py lab     # set up .venv, open JupyterLab on chapter 00
    python3 tools/course.py test    # set up .venv, run every test (unit, doctests, nbval)
    python3 tools/course.py bench   # set up .venv, time widgets and models
    python3 tools/course.py execute # set up .venv, re-execute notebooks and store outputs
    python3 tools/course.py site    # set up .venv, build the static HTML site (build/site)
    python3 tools/course.py instructor OUT/  # write an nbgrader course directory (graded edition)

Standard library only, so it runs on a fresh machine with any supported Python (3.11, 3.12,
3.13); an older one gets one line saying what to install. The
environment is a virtualenv in ``.venv`` holding the course with its test, delivery and
instructor extras, every package at the version in ``requirements/lock.txt`` (the
lock Binder's postBuild installs from too, so a learner gets tomorrow what passed
today). It is brought up to date whenever ``pyproject.toml`` or the lock changes.
JupyterLab's settings overrides (``config/jupyterlab-overrides.json``: no news
prompt over the first chapter; the kernel's busy indicator in the status bar, where
redrawing it does not slow the controls) are copied into the environment. ``lab`` is the
learner's JupyterLab: ``config/learner`` on ``JUPYTER_CONFIG_PATH`` switches nbgrader's menus,
panels and server extensions off (instructors grade with nbgrader's commands, see
INSTRUCTOR_GUIDE.md, or run ``.venv/bin/jupyter lab`` for its UI) and keeps chapters unmodified
when they open (see ``config/learner/jupyter_server_config.py``).

``test`` also needs a browser for tests/test_browser.py: Debian's ``chromium`` package. When it
is missing and this runs as root on a machine with apt-get (CI), it is installed; otherwise the
browser tests are skipped with a message saying how to install it.

``test`` runs the whole suite under the interpreter that started it. When another supported
interpreter is on ``PATH`` (``python3.13``, ``python3.12``, ``python3.11``; a pyenv shim for a
version pyenv has installed counts), it then also runs the unit tests, the doctests and one
notebook under the newest other one, in a second virtualenv ``.venv-py3XY`` built from the same
lock with only the test extra (no browser, site or Binder tooling: those are interpreter-neutral
and already ran). ``TRAINIUM_LAB_NO_EXTRA_PYTHON=1`` skips that run.
"""

import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13))
if sys.version_info[:2] < SUPPORTED[0]:  # before anything an old Python cannot run
    print("[course] Python %d.%d is too old: the course needs Python 3.11, 3.12 or 3.13; install "
          "one (python.org, your package manager, or `uv python install 3.13`) and run "
          "`python3.13 tools/course.py ...` with it." % sys.version_info[:2], file=sys.stderr)
    sys.exit(2)

import hashlib
import os
import shutil
import subprocess
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("TRAINIUM_LAB_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".trainium-lab-installed"
MAIN_EXTRAS = "test,delivery,instructor"
#: what the extra-interpreter run checks: everything but the browser, site, Binder, nbgrader
#: and notebook-suite files (they need the delivery/instructor extras or test the stored
#: notebooks as a whole), plus one notebook under nbval; chapter 07 compiles with JAX, the
#: dependency most tied to the interpreter
EXTRA_RUN_IGNORE = ["tests/test_browser.py", "tests/test_site.py", "tests/test_binder.py",
                    "tests/test_instructor.py", "tests/test_notebooks.py",
                    "tests/test_notebooks_any_cpu.py", "tests/test_wheel.py"]
EXTRA_RUN_NOTEBOOK = "notebooks/07_compilation.ipynb"
LOCK = ROOT / "requirements" / "lock.txt"
LAB_OVERRIDES = ROOT / "config" / "jupyterlab-overrides.json"
#: the learner's Jupyter configuration (``lab``): no nbgrader menus, panels or server extensions
#: (the instructor extra is installed in the same environment), and chapters that open unmodified
LEARNER_CONFIG = ROOT / "config" / "learner"
# jsonschema imports ~2 s slower in every kernel when this optional package is present
# (jsonschema PR 1521; see ../shared/reference/jupyter_stack_notes.md). Nothing here needs it.
SLOW_OPTIONAL = ["rfc3987-syntax"]


def log(msg: str) -> None:
    print(f"[course] {msg}", flush=True)


def run(cmd: list[str], **kw) -> None:
    log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def venv_python(env_dir: Path) -> Path:
    return env_dir / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt"
                                                                   else "python")


def wanted_stamp(version: tuple = sys.version_info[:2], extras: str = MAIN_EXTRAS) -> str:
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in (ROOT / "pyproject.toml", LOCK,
                                                                LAB_OVERRIDES))).hexdigest()
    return f"{digest} {tuple(version)} [{extras}]"


def ensure_supported_python(argv: list[str]) -> None:
    """Under Python newer than the lock knows, re-run under a supported one if there is one."""
    if sys.version_info[:2] in SUPPORTED or os.environ.get("TRAINIUM_LAB_ANY_PYTHON"):
        return
    found = supported_interpreters()
    if found:
        version, exe = found[0]
        log(f"this is Python {sys.version.split()[0]}; re-running with Python "
            f"{version[0]}.{version[1]} ({exe})")
        os.execv(exe, [exe, str(Path(__file__).resolve()), *argv])
    raise SystemExit(f"[course] Python {sys.version.split()[0]} is not supported yet (the lock is "
                     "tested with 3.11, 3.12 and 3.13) and none of those is on PATH: install one "
                     "(python.org, your package manager, or `uv python install 3.13`) and run "
                     "`python3.13 tools/course.py ...`.")


def probe(exe: str) -> tuple[tuple[int, int], str] | None:
    """(version, real executable) of a Python command, or None when it does not run."""
    try:
        out = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2], sys.executable)"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    major, minor, real = out.stdout.split(maxsplit=2)
    return (int(major), int(minor)), real.strip()


def pyenv_installed(name: str, shim: str) -> str | None:
    """A pyenv shim on PATH for a version pyenv has but has not selected: its real executable."""
    versions = Path(shim).resolve().parent.parent / "versions"
    found = sorted(versions.glob(f"{name[len('python'):]}.*/bin/{name}"),
                   key=lambda p: [int(x) if x.isdigit() else -1
                                  for x in p.parent.parent.name.split(".")])
    return str(found[-1]) if found else None


def supported_interpreters() -> list[tuple[tuple[int, int], str]]:
    """Supported Pythons on PATH, newest first: [((3, 13), '/path/python3.13'), ...]."""
    out = []
    for version in sorted(SUPPORTED, reverse=True):
        name = f"python{version[0]}.{version[1]}"
        exe = shutil.which(name)
        if exe is None:
            continue
        got = probe(exe)
        if got is None and os.sep + "shims" + os.sep in exe:
            real = pyenv_installed(name, exe)
            got = probe(real) if real else None
        if got is not None and got[0] == version:
            out.append(got)
    return out


def ensure_env(env_dir: Path = VENV, python: str = sys.executable,
               version: tuple = sys.version_info[:2], extras: str = MAIN_EXTRAS) -> Path:
    """Create a virtualenv if needed and install the pinned package with the given extras."""
    py = venv_python(env_dir)
    stamp = env_dir / STAMP.name
    if not py.exists():
        log(f"creating virtual environment in {env_dir} (Python {version[0]}.{version[1]})")
        if python == sys.executable:
            venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
        else:
            run([python, "-m", "venv", "--clear", env_dir])
    if stamp.exists() and stamp.read_text() == wanted_stamp(version, extras):
        return py
    run([py, "-m", "pip", "install", "--disable-pip-version-check", "-q", "-c", LOCK,
         "-e", f".[{extras}]"])
    run([py, "-m", "pip", "uninstall", "--disable-pip-version-check", "-q", "-y", *SLOW_OPTIONAL])
    run([py, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"])
    settings = env_dir / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(LAB_OVERRIDES, settings / "overrides.json")
    stamp.write_text(wanted_stamp(version, extras))
    return py


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


A11Y = ROOT / "tools" / "a11y"  # package.json + package-lock.json: axe-core for tests/test_site.py


def ensure_axe() -> bool:
    """Install axe-core from the npm registry with ``npm ci`` (pinned by package-lock.json) when
    it is missing or the lock changed, so the accessibility test runs offline; True if present.
    As root with apt-get and no npm (CI), Debian's npm is installed first."""
    stamp = A11Y / "node_modules" / ".trainium-lab-installed"
    wanted = hashlib.sha256((A11Y / "package-lock.json").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == wanted:
        return True
    npm = shutil.which("npm")
    apt = shutil.which("apt-get")
    if npm is None and is_root() and apt:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run([apt, "install", "-y", "-q", "--no-install-recommends", "npm"], env=env)
        npm = shutil.which("npm")
    if npm is None:
        log("npm not found: the accessibility test will fail (install Node.js and npm)")
        return False
    run([npm, "ci", "--prefix", A11Y, "--no-audit", "--no-fund", "--loglevel=error"])
    stamp.write_text(wanted)
    return True


def env_vars(env_dir: Path = VENV) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{venv_python(env_dir).parent}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(env_dir)
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    return env


def extra_interpreter_run() -> int:
    """Unit tests, doctests and one notebook under the newest other supported Python, if any."""
    if os.environ.get("TRAINIUM_LAB_NO_EXTRA_PYTHON"):
        log("TRAINIUM_LAB_NO_EXTRA_PYTHON is set: no run under a second interpreter")
        return 0
    others = [(v, exe) for v, exe in supported_interpreters() if v != sys.version_info[:2]]
    if not others:
        log("no other supported Python on PATH: no run under a second interpreter")
        return 0
    (major, minor), exe = others[0]
    start = time.monotonic()
    env_dir = ROOT / f".venv-py{major}{minor}"
    py = ensure_env(env_dir, exe, (major, minor), "test")
    setup_s = time.monotonic() - start
    workers = ["-n", "2", "--dist", "loadfile"] if (os.cpu_count() or 1) > 1 else []
    cmd = [py, "-m", "pytest", "-q", *workers, "-m", "not browser",
           *[f"--ignore={path}" for path in EXTRA_RUN_IGNORE],
           "tests", "trainium_lab", EXTRA_RUN_NOTEBOOK]
    log(f"second interpreter: Python {major}.{minor} ({exe})")
    log(" ".join(str(c) for c in cmd))
    code = subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env_vars(env_dir))
    log(f"Python {major}.{minor} run: exit {code}, setup {setup_s:.0f} s, "
        f"tests {time.monotonic() - start - setup_s:.0f} s")
    return code


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"lab", "test", "bench", "execute", "site", "instructor"}:
        print(__doc__)
        return 2
    what, rest = argv[0], argv[1:]
    ensure_supported_python(argv)
    ensure_env()
    env = env_vars()
    if what == "lab":
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            p for p in (str(LEARNER_CONFIG), env.get("JUPYTER_CONFIG_PATH", "")) if p)
        cmd = [BIN / "jupyter", "lab", "notebooks/00_start_here.ipynb", *rest]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        log(" ".join(str(c) for c in cmd))
        return subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)
    if what == "test":
        ensure_browser()
        ensure_axe()
        if is_root():
            env["TRAINIUM_LAB_REQUIRE_BROWSER"] = "1"  # CI: a missing browser is a failure
        workers = ["-n", "2", "--dist", "loadfile"] if (os.cpu_count() or 1) > 1 else []
        cmd = [PY, "-m", "pytest", *workers, *rest]
        log(" ".join(str(c) for c in cmd))
        code = subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)
        if rest:  # a chosen subset: only under this interpreter
            return code
        return code or extra_interpreter_run()
    elif what == "instructor":
        cmd = [PY, "tools/instructor.py", *rest]
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
