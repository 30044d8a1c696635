"""One source for the pins: pyproject.toml pins the direct dependencies, requirements/lock.txt
pins everything (transitive ones included) and agrees with it; the environment under test is
exactly the lock; Binder installs from the same lock; JupyterLab's settings overrides ship."""

import json
import os
import re
import subprocess
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


sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402
import lock as lock_tool  # noqa: E402

SUPPORTED = [(3, 11), (3, 12), (3, 13)]


def test_binder_builds_one_pinned_supported_python_and_installs_from_the_lock():
    env = (ROOT / "environment.yml").read_text()
    deps = re.findall(r"^\s+-\s+(\S+)\s*$", env.split("dependencies:", 1)[1], flags=re.M)
    assert len(deps) == 2 and deps[1] == "pip", deps
    pinned = re.fullmatch(r"python=(\d+)\.(\d+)", deps[0])
    assert pinned and (int(pinned[1]), int(pinned[2])) in SUPPORTED, deps
    post = (ROOT / "postBuild").read_text()
    assert re.search(r"pip install .*-c requirements/lock\.txt .*-e \"?\.\[test\]\"?", post)
    assert "delivery" not in re.sub(r"#.*", "", post), "Binder does not need the delivery tooling"
    assert (ROOT / "postBuild").stat().st_mode & 0o111


def test_requires_python_is_311_to_313_and_so_is_the_environment():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["requires-python"] == ">=3.11,<3.14"
    assert sys.version_info[:2] in SUPPORTED
    assert list(course.SUPPORTED) == SUPPORTED  # tools/course.py accepts exactly these


def test_lock_is_universal_from_the_oldest_supported_python():
    """uv resolves one lock for every Python that requires-python admits, from --python-version
    on; the lock forks a package by a python marker where 3.11 and 3.13 need different ones."""
    source = Path(lock_tool.__file__).read_text()
    assert '"--universal", "--python-version", "3.11"' in source
    for extra in ("test", "delivery", "instructor"):
        assert f'"--extra", "{extra}"' in source
    markers = re.findall(r";\s*(.+?)\s*(?:#|$)", LOCK.read_text(), flags=re.M)
    for marker in markers:
        # every marker is about a platform or a Python version the lock covers
        assert re.search(r"sys_platform|os_name|platform_|implementation_|python_(full_)?version", marker), marker
    for version in ("3.11.7", "3.12.1", "3.13.0"):
        env = {"python_version": version.rsplit(".", 1)[0], "python_full_version": version,
               "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
               "implementation_name": "cpython", "platform_python_implementation": "CPython",
               "os_name": "posix"}
        chosen: dict[str, int] = {}
        for line in LOCK.read_text().splitlines():
            req, _, marker = line.split("#", 1)[0].partition(";")
            if req.strip() and (not marker.strip() or Marker(marker.strip()).evaluate(env)):
                name = parse(req)[0]
                chosen[name] = chosen.get(name, 0) + 1
        assert all(n == 1 for n in chosen.values()), (version, [k for k, n in chosen.items() if n > 1])
        assert set(pyproject_pins()) <= set(chosen), version


def test_an_older_python_gets_one_line_saying_what_to_do():
    """tools/course.py under Python 3.9 (simulated): one line on stderr, exit 2, nothing run."""
    code = ("import sys, runpy; sys.version_info = (3, 9, 18, 'final', 0); sys.argv = ['course.py', 'test']; "
            f"runpy.run_path({str(ROOT / 'tools' / 'course.py')!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Python 3.9 is too old" in lines[0] and "3.11, 3.12 or 3.13" in lines[0]
    assert "python3.13 tools/course.py" in lines[0]


def _fake_python(folder: Path, name: str, version: tuple[int, int]) -> Path:
    exe = folder / name
    exe.write_text(f"#!/bin/sh\necho {version[0]} {version[1]} {exe}\n")
    exe.chmod(0o755)
    return exe


def test_finds_supported_interpreters_newest_first(tmp_path, monkeypatch):
    """Pythons on PATH, and a pyenv shim whose version pyenv installed but did not select."""
    plain = tmp_path / "bin"
    plain.mkdir()
    _fake_python(plain, "python3.11", (3, 11))
    _fake_python(plain, "python3.10", (3, 10))  # not supported: never picked
    pyenv = tmp_path / "pyenv"
    (pyenv / "shims").mkdir(parents=True)
    shim = pyenv / "shims" / "python3.13"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.13: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    for version in ("3.13.0", "3.13.2"):
        (pyenv / "versions" / version / "bin").mkdir(parents=True)
        _fake_python(pyenv / "versions" / version / "bin", "python3.13", (3, 13))
    monkeypatch.setenv("PATH", f"{pyenv / 'shims'}{os.pathsep}{plain}")
    found = course.supported_interpreters()
    assert [v for v, _ in found] == [(3, 13), (3, 11)]
    assert found[0][1] == str(pyenv / "versions" / "3.13.2" / "bin" / "python3.13")


def test_extra_interpreter_run_is_lean_and_names_real_files():
    """The second interpreter runs the unit tests, doctests and one notebook, not the suites that
    need the delivery or instructor extras."""
    for path in course.EXTRA_RUN_IGNORE:
        assert (ROOT / path).is_file(), path
    assert (ROOT / course.EXTRA_RUN_NOTEBOOK).is_file()
    src = (ROOT / "tools" / "course.py").read_text()
    assert 'ensure_env(env_dir, exe, (major, minor), "test")' in src
    assert "return code or extra_interpreter_run()" in src


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


def test_kernel_indicator_is_on_the_status_bar():
    """The kernel's busy/idle indicator sits in the status bar, not the notebook toolbar: in the
    toolbar every busy and idle re-renders it inside JupyterLab's toolbar web component, which
    then re-reads the focus order of the whole toolbar and forces a layout of the page, twice
    per slider press (about 6 ms of the slider-to-chart time, tools/benchmarks/browser.py).
    The setting must be one JupyterLab's schema has, with the same default components."""
    shipped = json.loads((ROOT / "config" / "jupyterlab-overrides.json").read_text())
    status = shipped["@jupyterlab/notebook-extension:tracker"]["kernelStatus"]
    schema = Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/notebook-extension/tracker.json"
    tracker = json.loads(schema.read_text())
    default = tracker["properties"]["kernelStatus"]["default"]
    assert status == {**default, "showOnStatusBar": True}
    assert set(status) <= set(tracker["definitions"]["kernelStatusConfig"]["properties"])


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python3 tools/course.py test"
    assert command in readme and command in ci
    assert "python3 tools/course.py lab" in readme


def test_every_chapters_first_link_stays_inside_the_served_folder():
    """Issue 42: "Contents" pointed at ../README.md, outside the folder JupyterLab serves, and
    did nothing. Every link of the navigation cells (the first and last cells) is a chapter in
    notebooks/, or an anchor that chapter holds."""
    import json
    import re

    notebooks = ROOT / "notebooks"
    for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in (cells[0], cells[-1]):
            links = re.findall(r"\]\(([^)]+)\)", "".join(cell["source"]))
            assert links and "Contents" in "".join(cell["source"]), path.name
            for link in links:
                if link.startswith("https://"):
                    continue
                target, _, anchor = link.partition("#")
                file = notebooks / (target or path.name)
                assert file.resolve().parent == notebooks.resolve() and file.is_file(), (path.name, link)
                if anchor:
                    text = "".join("".join(c["source"]) for c in
                                   json.loads(file.read_text(encoding="utf-8"))["cells"])
                    assert f'<a id="{anchor}"></a>' in text, (path.name, link)
