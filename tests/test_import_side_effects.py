"""No side effects at import time (STYLE.md, issue 13): importing any module of the package
reads no file of data/. All modules are imported in one fresh interpreter with the function
that opens data/ files instrumented; a read is blamed on the module whose import caused it."""

import json
import pkgutil
import subprocess
import sys

import trainium_lab

SKIP = {"__main__", "jaxdemo"}  # jaxdemo imports JAX lazily; __main__ runs the CLI

PROBE = """
import importlib, json, sys
from trainium_lab import specs
opened = []
original = specs._open_data
specs._open_data = lambda name: (opened.append(name), original(name))[1]
blame = {}
for module in json.loads(sys.argv[1]):
    before = len(opened)
    importlib.import_module(module)
    if len(opened) > before:
        blame[module] = opened[before:]
print(json.dumps(blame))
"""


def test_importing_reads_no_data_file():
    modules = [info.name for info in pkgutil.walk_packages(trainium_lab.__path__, "trainium_lab.")
               if info.name.rsplit(".", 1)[-1] not in SKIP]
    assert len(modules) > 40 and "trainium_lab.widgets.layouts" in modules
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(modules)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}
