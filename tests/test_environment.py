"""One source for the pins: pyproject.toml pins the direct dependencies, requirements/lock.txt
pins everything (transitive ones included) and agrees with it; the environment under test is
exactly the lock; Binder installs from the same lock; JupyterLab's settings overrides ship."""

import json
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
#: installed by venv itself, not by the lock; and the course's own package
BOOTSTRAP = {"pip", "setuptools", "trainium-lab"}


def pyproject_pins(extras=None) -> dict[str, str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for name, extra in meta.get("optional-dependencies", {}).items():
        if extras is None or name in extras:
            reqs += extra
    return dict(parse(r) for r in reqs)


def parse(req: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\],]+?)\s*==\s*([^\s;]+)\s*", req)
    assert match, f"not pinned with ==: {req!r}"
    name = re.sub(r"\[.*\]", "", match.group(1))
    return canonicalize_name(name), match.group(2)


def lock(*, this_platform: bool) -> dict[str, list[str]]:
    """name -> versions in the lock (all of them, or those whose marker holds here)."""
    out: dict[str, list[str]] = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req, _, marker = line.partition(";")
        name, version = parse(req)
        if this_platform and marker.strip() and not Marker(marker.strip()).evaluate():
            continue
        out.setdefault(name, []).append(version)
    return out


def test_every_dependency_is_pinned():
    assert len(pyproject_pins()) >= 10


def test_lock_agrees_with_pyproject():
    locked = lock(this_platform=False)
    for name, version in pyproject_pins().items():
        assert locked.get(name) == [version], f"{name}: pyproject {version}, lock {locked.get(name)}"
    assert len(locked) > 3 * len(pyproject_pins()), "the lock holds transitive dependencies too"


def test_environment_under_test_is_the_lock():
    """Every installed distribution is at the lock's version: what passed today is what is tested."""
    locked = lock(this_platform=True)
    problems = []
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        if name in BOOTSTRAP:
            continue
        if name not in locked:
            problems.append(f"{name} {dist.version} is installed but not in the lock")
        elif dist.version not in locked[name]:
            problems.append(f"{name} {dist.version} is installed; the lock has {locked[name]}")
    assert not problems, "\n".join(problems) + "\n(run python3 tools/course.py test to update .venv)"


def test_binder_builds_python_311_and_installs_from_the_lock():
    env = (ROOT / "environment.yml").read_text()
    deps = re.findall(r"^\s+-\s+(\S+)\s*$", env.split("dependencies:", 1)[1], flags=re.M)
    assert deps == ["python=3.11", "pip"], deps
    post = (ROOT / "postBuild").read_text()
    assert re.search(r"pip install .*-c requirements/lock\.txt .*-e \"?\.\[test\]\"?", post)
    assert "delivery" not in re.sub(r"#.*", "", post), "Binder does not need the delivery tooling"
    assert (ROOT / "postBuild").stat().st_mode & 0o111


def test_requires_python_matches_environment():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "3.11" in meta["requires-python"]
    assert sys.version_info[:2] == (3, 11)


def test_jupyterlab_news_prompt_is_off():
    """The first thing a learner sees is the chapter, not 'get notified about Jupyter news?'."""
    shipped = json.loads((ROOT / "config" / "jupyterlab-overrides.json").read_text())
    notification = shipped["@jupyterlab/apputils-extension:notification"]
    assert notification == {"checkForUpdates": False, "fetchNews": "false"}
    schema = Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension/notification.json"
    props = json.loads(schema.read_text())["properties"]
    assert "false" in [choice["const"] for choice in props["fetchNews"]["oneOf"]]
    installed = Path(sys.prefix) / "share/jupyter/lab/settings/overrides.json"
    assert json.loads(installed.read_text()) == shipped
    assert "config/jupyterlab-overrides.json" in (ROOT / "postBuild").read_text()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python3 tools/course.py test"
    assert command in readme and command in ci
    assert "python3 tools/course.py lab" in readme
