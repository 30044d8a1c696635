"""Binder, checked here: repo2docker reads the repository the way mybinder.org will.

``repo2docker --no-build --debug --no-run .`` picks a buildpack and prints the Dockerfile it would
build, without docker and without a network (see ../shared/reference/jupyter_stack_notes.md).
The test runs it with every proxy pointed at a closed local port and no docker daemon, and checks
that it picks the conda buildpack (environment.yml), with the pinned Python, and runs postBuild
(which installs the course package). The pins themselves are compared with pyproject.toml in
tests/test_environment.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPO2DOCKER = Path(sys.executable).parent / "repo2docker"


@pytest.fixture(scope="module")
def dry_run() -> subprocess.CompletedProcess:
    assert REPO2DOCKER.exists(), "repo2docker missing: pip install -e '.[test]'"
    env = dict(os.environ)
    dead = "http://127.0.0.1:9"  # nothing listens: any network access would fail
    env.update(HTTP_PROXY=dead, HTTPS_PROXY=dead, http_proxy=dead, https_proxy=dead,
               NO_PROXY="", no_proxy="", DOCKER_HOST="unix:///nonexistent/docker.sock")
    return subprocess.run([str(REPO2DOCKER), "--no-build", "--debug", "--no-run", "."],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def pinned_python() -> str:
    match = re.search(r"^\s*-\s*python\s*=\s*([\d.]+)\s*$",
                      (ROOT / "environment.yml").read_text(), re.M)
    assert match, "environment.yml does not pin python="
    return match.group(1)


def test_repo2docker_runs_offline_without_docker(dry_run):
    assert dry_run.returncode == 0, dry_run.stderr[-3000:]
    assert "FROM " in dry_run.stdout  # the Dockerfile it would build


def test_picks_the_conda_buildpack_with_the_pinned_python(dry_run):
    python = pinned_python()
    assert python == "3.11"
    assert f"Building conda environment for python={python}" in dry_run.stderr
    dockerfile = dry_run.stdout
    assert "buildpacks/conda" in dockerfile.replace("-2f", "/")
    # the base environment is repo2docker's lock file for exactly this Python
    assert re.search(rf"environment\.py-{re.escape(python)}-linux-64\.lock",
                     dockerfile.replace("-2e", ".").replace("-2d", "-"))
    # then our environment.yml is applied on top of it
    assert "environment.yml" in dockerfile
    assert re.search(r"env update -p \$\{NB_PYTHON_PREFIX\} --file \"environment\.yml\"",
                     dockerfile)
    assert "requirements.txt" not in dockerfile  # environment.yml wins; nothing else is read


def test_runs_postbuild_which_installs_the_package(dry_run):
    dockerfile = dry_run.stdout
    assert "RUN ./postBuild" in dockerfile
    lines = dockerfile.splitlines()
    env_update = next(i for i, ln in enumerate(lines) if "environment.yml" in ln and "COPY" in ln)
    assert lines.index("RUN ./postBuild") > env_update  # after the environment exists
    post_build = (ROOT / "postBuild").read_text()
    assert re.search(r"pip install .*-e \"?\.", post_build)
