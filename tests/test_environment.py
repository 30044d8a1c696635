"""pyproject.toml and environment.yml pin the same versions; Binder's files are in place."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pyproject_pins() -> dict[str, str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for extra in meta.get("optional-dependencies", {}).values():
        reqs += extra
    return dict(parse(r) for r in reqs)


def parse(req: str) -> tuple[str, str]:
    match = re.fullmatch(r"\s*([A-Za-z0-9_.\-\[\],]+?)\s*==\s*([^\s;]+)\s*", req)
    assert match, f"not pinned with ==: {req!r}"
    name = re.sub(r"\[.*\]", "", match.group(1))
    return re.sub(r"[-_.]+", "-", name).lower(), match.group(2)


def environment_yml() -> tuple[str | None, dict[str, str], list[str]]:
    """(python pin, pip pins, conda packages) read with a tiny parser (no PyYAML needed)."""
    python, pip, conda = None, {}, []
    in_pip = False
    section = ""
    for raw in (ROOT / "environment.yml").read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        item = line.strip()
        if not raw.startswith(" "):
            section = item.split(":", 1)[0]
            continue
        if section != "dependencies":
            continue
        if item.startswith("- pip:"):
            in_pip = True
            continue
        if in_pip and raw.startswith("      - "):
            name, version = parse(item[2:])
            pip[name] = version
            continue
        in_pip = False
        if raw.startswith("  - "):
            conda.append(item[2:])
            if item[2:].startswith("python="):
                python = item[2:].split("=", 1)[1]
    return python, pip, conda


def test_every_dependency_is_pinned():
    assert len(pyproject_pins()) >= 10


def test_environment_yml_matches_pyproject():
    python, pip, conda = environment_yml()
    assert pip == pyproject_pins()
    assert python == "3.11"
    assert set(conda) == {"python=3.11", "pip"}


def test_requires_python_matches_environment():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "3.11" in meta["requires-python"]


def test_postbuild_installs_the_package():
    text = (ROOT / "postBuild").read_text()
    assert re.search(r"pip install .*-e \.", text)
    assert (ROOT / "postBuild").stat().st_mode & 0o111


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    command = "python3 tools/course.py test"
    assert command in readme and command in ci
    assert "python3 tools/course.py lab" in readme
