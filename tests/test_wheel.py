"""The package installs like a package: a wheel built from the repository carries its data,
and an ordinary (non-editable) install in a fresh virtual environment outside the repository
answers ``python -m trainium_lab specs trn2`` and a ``sizing`` command from any directory.

The fresh environment gets the course's dependencies by pointing a ``.pth`` file at the test
environment's site-packages (no download of numpy, pandas, jax...), after its own site-packages:
``trainium_lab`` is imported from the installed wheel, which the test checks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from trainium_lab.units import GiB

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python of a fresh venv with the wheel installed, a working directory outside the repo)."""
    tmp = tmp_path_factory.mktemp("wheel")
    dist = tmp / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "--disable-pip-version-check", "-w", str(dist), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(dist.glob("trainium_lab-*.whl"))
    env = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    py = env / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "course_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    inst = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "-q",
                           "--disable-pip-version-check", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert inst.returncode == 0, inst.stderr[-3000:]
    work = tmp / "elsewhere"
    work.mkdir()
    return wheel, py, work


def run(py, work, *args):
    return subprocess.run([str(py), "-m", "trainium_lab", *args], cwd=work, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})


def test_wheel_carries_the_data_and_its_documentation(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for csv_name in ["chips.csv", "sources.csv", "model_presets.csv", "README.md"]:
        assert f"trainium_lab/data/{csv_name}" in names


def test_installed_package_is_the_wheel_not_the_checkout(installed):
    _, py, work = installed
    where = subprocess.run([str(py), "-c", "import trainium_lab, sys; print(trainium_lab.__file__)"],
                           cwd=work, capture_output=True, text=True, check=True).stdout
    assert str(py.parent.parent) in where and str(ROOT) not in where


def test_specs_from_the_installed_wheel(installed):
    _, py, work = installed
    proc = run(py, work, "specs", "trn2")
    assert proc.returncode == 0, proc.stderr
    assert "hbm_bytes" in proc.stdout and "96" in proc.stdout


def test_sizing_from_the_installed_wheel(installed):
    """published_cases.md, "Sizing 70B on 2T tokens, trn2": 1,043 GiB of state, 17 chips."""
    _, py, work = installed
    proc = run(py, work, "sizing", "--params", "70B", "--tokens", "2T", "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert round(results["state_bytes"] / GiB) == 1043 and results["min_chips"] == 17


def test_wheel_carries_the_chart_font_and_its_licence(installed):
    """Static charts measure their text with the shipped DejaVu Sans (trainium_lab/fonts): the
    wheel must carry the fonts and their licence, and the installed package must find them."""
    wheel, py, work = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "LICENSE", "README.md"]:
        assert f"trainium_lab/fonts/{name}" in names
    probe = ("from trainium_lab.charts import base; base.register_fonts(); "
             "print(sorted(p.name for p in base.FONT_DIR.glob('*.ttf')), base.FONT_DIR)")
    out = subprocess.run([str(py), "-c", probe], cwd=work, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("['DejaVuSans-Bold.ttf', 'DejaVuSans.ttf']")
    assert str(ROOT) not in out.stdout
