"""Every chapter in a real browser: what a learner sees in JupyterLab, not only what a kernel returns.

For each ``notebooks/NN_*.ipynb`` the test starts (once) a JupyterLab server on 127.0.0.1 with a
token, opens the notebook in headless Chromium (Debian's ``chromium`` package, driven by
Playwright; no browser download), clears the stored outputs, runs all cells from the Run menu and
then checks, in the page:

* no cell shows an error (no stderr/traceback output, no "Error displaying widget");
* every widget the stored notebook displays has rendered as widget controls;
* every chart rendered: each static chart output shows an SVG image with a size, and each
  interactive chart view inside a widget holds a drawn ``svg`` or ``canvas``;
* in the first widget that has a chart, changing one control in the page changes the chart;
* **as a learner uses it** (:func:`drive_explorers`): in every explorer, each control is set to
  its extremes (slider Home/End, first and last menu option, checkbox toggled, number box given
  ``0``), each number box and slider readout one bad value (``abc``, ``1e30``), ``50%`` typed
  into a percentage slider's readout (it must then read 50, not be clamped), and the control
  is put back where it began, so each is tried from the defaults (a sample per control, not
  every combination); after each action no traceback is in the page or went to the log
  console (kernel ``error``/``stderr`` messages on the websocket), the explorer's output
  changed or shows an error, a bad value is answered inline by a message naming the control,
  no label is cut and every menu is wide enough for the option it shows, and nothing sticks
  out of the notebook column at 1440×900 (a 1,008 px column) — nor, checked once after, at
  1280×800 (848 px);
* nothing was fetched from any host but 127.0.0.1 (requests elsewhere are blocked and listed).

A screenshot per notebook goes to ``artifacts/screenshots/NN_name.png`` (also on failure).
Notebooks are copied to a temporary folder first, so JupyterLab's autosave cannot touch the
stored outputs. ``TRAINIUM_LAB_BROWSER_NOTEBOOKS`` (paths separated by ``os.pathsep``) replaces
the notebook list, e.g. to show that a deliberately broken chart makes the test fail.

Chromium missing: the test is skipped, unless ``TRAINIUM_LAB_REQUIRE_BROWSER=1`` (set by
``tools/course.py test`` after installing it), where it fails. See
``../shared/reference/jupyter_stack_notes.md`` for what was measured on these machines.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("TRAINIUM_LAB_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
RUN_ALL_TIMEOUT_MS = 240_000  # whole notebook, on 2 busy cores
SETTLE_TIMEOUT_MS = 60_000  # widgets and charts drawn after the last cell finished
CHANGE_TIMEOUT_MS = 8_000  # one control change reaching the chart


def _notebooks() -> list[Path]:
    chosen = os.environ.get("TRAINIUM_LAB_BROWSER_NOTEBOOKS")
    if chosen:
        return [Path(p).resolve() for p in chosen.split(os.pathsep) if p]
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


NOTEBOOKS = _notebooks()
pytestmark = pytest.mark.browser


def _require_browser() -> None:
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (Debian package 'chromium')")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("Python package 'playwright'")
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("TRAINIUM_LAB_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on loopback serving a temporary copy of the notebooks."""

    def __init__(self, workdir: Path, windowing_mode: str | None = "none", config_path: Path | None = None):
        """``windowing_mode``: JupyterLab's notebook windowing; ``"none"`` (the test's) renders
        every cell, ``None`` keeps JupyterLab's default, the one a learner gets. ``config_path``:
        a Jupyter configuration folder put first on ``JUPYTER_CONFIG_PATH`` (the learner's:
        ``config/learner``, as ``tools/course.py lab`` does)."""
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.root = workdir / "notebooks"
        self.root.mkdir()
        # Render every cell (no virtual scrolling, unless ``windowing_mode`` says otherwise) so
        # every output is in the DOM to be checked; start the notebook's kernel without asking;
        # never ask about or fetch news.
        tracker = {"autoStartDefaultKernel": True}
        if windowing_mode is not None:
            tracker["windowingMode"] = windowing_mode
        for plugin, values in {
            "notebook-extension/tracker": tracker,
            "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        }.items():
            folder, name = plugin.split("/")
            settings = workdir / "settings" / "@jupyterlab" / folder
            settings.mkdir(parents=True, exist_ok=True)
            (settings / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
        for name in ("config", "runtime", "workspaces"):
            (workdir / name).mkdir()
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["JUPYTER_CONFIG_DIR"] = str(workdir / "config")  # ignore the user's Jupyter config
        env["JUPYTER_RUNTIME_DIR"] = str(workdir / "runtime")
        env["JUPYTER_PLATFORM_DIRS"] = "1"
        if config_path is not None:
            env["JUPYTER_CONFIG_PATH"] = str(config_path)
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root}",
               f"--LabApp.user_settings_dir={workdir / 'settings'}",
               f"--LabApp.workspaces_dir={workdir / 'workspaces'}",
               "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        self.log = open(workdir / "jupyterlab.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self._wait_ready(workdir / "jupyterlab.log")

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.base}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def _wait_ready(self, log: Path, timeout_s: float = 90) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited:\n{log.read_text()[-3000:]}")
            try:
                self.api("/api/status")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer in {timeout_s} s:\n{log.read_text()[-3000:]}")

    def url(self, name: str) -> str:
        return f"{self.base}/lab/tree/{name}?reset&token={self.token}"

    def wait_kernel_idle(self, name: str, page, timeout_s: float = 90) -> None:
        """Wait until the notebook's kernel is started, connected to the page and idle.

        Waits with ``page.wait_for_timeout`` so Playwright keeps serving the page's routed
        requests meanwhile (a plain sleep would stall them).
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for session in self.api("/api/sessions"):
                kernel = session.get("kernel") or {}
                if (session["path"] == name and kernel.get("execution_state") == "idle"
                        and kernel.get("connections", 0) >= 1):
                    return
            page.wait_for_timeout(300)
        raise AssertionError(f"no idle kernel for {name} after {timeout_s} s: {self.api('/api/sessions')}")

    def kernel_idle(self, name: str) -> bool:
        """Whether the notebook's kernel is idle (widget callbacks included)."""
        return all((s.get("kernel") or {}).get("execution_state") == "idle"
                   for s in self.api("/api/sessions") if s["path"] == name)

    def shutdown_kernels(self) -> None:
        for session in self.api("/api/sessions"):
            self.api(f"/api/sessions/{session['id']}", method="DELETE")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    _require_browser()
    lab = Lab(tmp_path_factory.mktemp("lab"))
    yield lab
    lab.stop()


@pytest.fixture(scope="module")
def playwright_driver():
    """One Playwright driver for the module: its sync API cannot be started again inside itself, so
    every test that drives a browser here takes this one."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="module")
def browser(lab, playwright_driver):
    """One headless Chromium context for all notebooks (JupyterLab's scripts stay cached)."""
    chromium = playwright_driver.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    yield context
    context.close()
    chromium.close()


# --- what the page shows ---------------------------------------------------------------------

# Every top-level widget view in an output, its widget-error texts, and the chart views inside.
# A widget's own views carry the class "jupyter-widgets"; a custom (anywidget) view such as
# Altair's JupyterChart does not, and must hold a drawn <svg> or <canvas>.
REPORT_JS = r"""
() => {
  const drawn = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 10 && r.height > 10;
  };
  const outputs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
  const errors = outputs
    .filter(o => o.dataset.mimeType === 'application/vnd.jupyter.stderr')
    .map(o => o.innerText.slice(0, 500));
  const widgetErrors = outputs
    .filter(o => /Error displaying widget|Failed to load model class|Error rendering/.test(o.innerText))
    .map(o => o.innerText.slice(0, 300));
  const widgets = outputs.filter(o => o.querySelector(':scope > .jupyter-widgets'));
  const loading = outputs.filter(o => /^\s*Loading widget/.test(o.innerText)).length;
  const charts = [];
  for (const w of widgets) {
    const views = [...w.querySelectorAll('.widget-container > .lm-Widget:not(.jupyter-widgets)')];
    for (const v of views) {
      // a control (slider, dropdown...) is not a chart, whatever classes its view carries
      if (v.querySelector('.widget-label, .widget-readout, input, select')) continue;
      const g = v.querySelector('svg.marks, canvas.marks, svg, canvas');
      charts.push({kind: 'interactive', ok: !!g && drawn(g), text: v.innerText.slice(0, 300)});
    }
  }
  for (const o of outputs.filter(o => o.dataset.mimeType === 'image/svg+xml')) {
    const img = o.querySelector('img');
    const svg = o.querySelector('svg');
    const ok = img ? (img.complete && img.naturalWidth > 10 && drawn(img)) : (!!svg && drawn(svg));
    charts.push({kind: 'static', ok, text: ''});
  }
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
    .map(p => p.textContent.trim());
  return {errors, widgetErrors, nWidgets: widgets.length, loading, charts, prompts};
}
"""

ALL_RAN_JS = r"""
() => {
  const ps = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
  const idle = document.querySelector(".jp-Notebook-ExecutionIndicator[data-status='idle']");
  return ps.length > 0 && !!idle && ps.every(p => /\[\d+\]/.test(p.textContent));
}
"""

INDICATOR_PLACES_JS = r"""
() => [...document.querySelectorAll('.jp-Notebook-ExecutionIndicator')].map(e =>
  e.closest('#jp-main-statusbar') ? 'status bar' : e.closest('jp-toolbar, .jp-Toolbar') ? 'toolbar' : 'elsewhere')
"""

SETTLED_JS = r"""
([nWidgets, nStatic]) => {
  const outputs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')];
  const widgets = outputs.filter(o => o.querySelector(':scope > .jupyter-widgets'));
  const views = widgets.flatMap(w =>
    [...w.querySelectorAll('.widget-container > .lm-Widget:not(.jupyter-widgets)')]);
  const statics = outputs.filter(o => o.dataset.mimeType === 'image/svg+xml');
  return widgets.length >= nWidgets && statics.length >= nStatic &&
    views.every(v => v.querySelector('svg, canvas') || v.innerText.trim());  // drawn, or an error
}
"""

# A fingerprint of the first chart view inside a widget output (SVG markup or canvas pixels).
CHART_STATE_JS = r"""
(out) => {
  const v = out.querySelector('.widget-container > .lm-Widget:not(.jupyter-widgets)');
  if (!v) return null;
  const c = v.querySelector('canvas');
  if (c) return c.toDataURL();
  const s = v.querySelector('svg');
  return s ? s.outerHTML : null;
}
"""


def _expected(path: Path) -> tuple[int, int, int]:
    """(code cells, widget outputs, static SVG chart outputs) in the stored notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    outputs = [o.get("data", {}) for c in cells for o in c.get("outputs", [])]
    return (len(cells), sum(WIDGET_MIME in d for d in outputs),
            # a widget's output also stores its default view as SVG, but a live kernel shows
            # the widget instead: static charts are the SVG outputs that are not widgets
            sum("image/svg+xml" in d and WIDGET_MIME not in d for d in outputs))


def _menu(page, menu: str, command: str) -> None:
    page.click(f".lm-MenuBar-itemLabel:text-is('{menu}')")
    page.click(f"li[data-command='{command}']")


def _change_one_control(page, out) -> str | None:
    """Change controls of one widget in turn until the chart changes; name the one that did."""
    before = out.evaluate(CHART_STATE_JS)
    assert before, "the widget's chart has nothing drawn to compare"
    tried = []
    for control in out.query_selector_all(".jupyter-widgets.widget-inline-hbox, "
                                          ".jupyter-widgets.widget-toggle-buttons"):
        label = (control.query_selector("label.widget-label") or control).inner_text().strip()
        acted = _act_on(page, control)
        if not acted:
            continue
        tried.append(f"{label!r} ({acted})")
        try:
            page.wait_for_function(
                "([out, before, js]) => { const now = eval(js)(out); return now && now !== before; }",
                arg=[out, before, CHART_STATE_JS], timeout=CHANGE_TIMEOUT_MS)
            return tried[-1]
        except Exception:  # noqa: BLE001 - playwright TimeoutError: this control did not change it
            before = out.evaluate(CHART_STATE_JS)
    raise AssertionError(f"no control changed the chart; tried {tried or 'nothing (no usable control)'}")


def _act_on(page, control) -> str | None:
    """Change one control the way a learner would; describe what was done (None: cannot)."""
    select = control.query_selector("select")
    if select is not None:
        options = select.evaluate("s => [...s.options].map(o => o.value)")
        current = select.evaluate("s => s.value")
        others = [o for o in options if o != current]
        if not others:
            return None
        select.select_option(others[-1])
        return f"chose {others[-1]!r}"
    handle = control.query_selector(".noUi-handle")
    if handle is not None:
        handle.focus()
        for _ in range(3):
            handle.press("ArrowRight")
        return "3 × ArrowRight"
    box = control.query_selector("input[type=checkbox]")
    if box is not None:
        box.click()
        return "clicked the checkbox"
    field = control.query_selector("input[type=number], input[type=text]")
    if field is not None:
        old = field.input_value()
        try:
            new = str(float(old) * 2 if float(old) else 1.0)
        except ValueError:
            return None
        field.fill(new)
        field.press("Enter")
        return f"typed {new} (was {old})"
    buttons = [b for b in control.query_selector_all("button") if "mod-active" not in (b.get_attribute("class") or "")]
    if buttons:
        buttons[-1].click()
        return f"clicked {buttons[-1].inner_text()!r}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_renders_in_jupyterlab(path, lab, browser, record_property):
    actions = []
    start = time.monotonic()
    changed = check_notebook(path, lab, browser, SCREENSHOTS / f"{path.stem}.png", drive=actions.append)
    record_property("control_changed", changed)
    n = sum(len(a) for a in actions)
    print(f"{path.name}: changing {changed} changed the chart; {n} learner actions; "
          f"{time.monotonic() - start:.0f} s")


@pytest.mark.slow
def test_a_broken_chart_fails_the_check(lab, browser, tmp_path):
    """The check itself can fail: a copy of chapter 00 whose widget chart has a spec Vega-Lite
    cannot draw (a mark type that does not exist) must be reported as a chart not drawn."""
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "weights_explorer(" in c.source)
    cell.source = ("ex = weights_explorer(8.0)\n"
                   "broken = dict(ex.chart.spec, mark={'type': 'no-such-mark'})\n"
                   "ex.chart.spec = broken\nex")
    path = tmp_path / "00_broken_chart.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(AssertionError, match="not drawn"):
        check_notebook(path, lab, browser, tmp_path / "broken.png")


def check_notebook(path: Path, lab: Lab, browser, shot: Path, drive=False) -> str | None:
    """Open, run and check one notebook in the page; return the control that changed the chart."""
    n_code, n_widgets, n_static = _expected(path)
    changed = None
    shutil.copy2(path, lab.root / path.name)
    blocked: list[str] = []
    page_errors: list[str] = []

    page = browser.new_page()

    def only_loopback(route):
        url = route.request.url
        if url.startswith((f"{lab.base}/", "data:", "blob:")):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    page.route("**/*", only_loopback)
    page.on("pageerror", lambda exc: page_errors.append(str(exc)[:300]))
    kernel_errors: list[str] = []
    page.on("websocket", lambda ws: ws.on("framereceived",
                                          lambda payload: _kernel_error(payload, kernel_errors)))
    shot.parent.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(lab.url(path.name))
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        lab.wait_kernel_idle(path.name, page)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=30_000)
        assert not page.query_selector(".jp-Dialog"), page.inner_text(".jp-Dialog")
        # the course's settings (config/jupyterlab-overrides.json) put the kernel's indicator
        # in the status bar, out of the notebook toolbar (where it slows every widget update)
        assert page.evaluate(INDICATOR_PLACES_JS) == ["status bar"]
        # Clear the stored outputs first: everything checked below was produced in this page.
        _menu(page, "Edit", "editmenu:clear-all")
        page.wait_for_function(
            "() => document.querySelectorAll('.jp-Notebook .jp-OutputArea-output').length === 0")
        _menu(page, "Run", "runmenu:run-all")
        page.wait_for_function(ALL_RAN_JS, timeout=RUN_ALL_TIMEOUT_MS)
        try:
            page.wait_for_function(SETTLED_JS, arg=[n_widgets, n_static], timeout=SETTLE_TIMEOUT_MS)
        except Exception:  # noqa: BLE001 - report what is missing below instead
            pass
        report = page.evaluate(REPORT_JS)

        assert len(report["prompts"]) == n_code
        assert not report["errors"], f"error output in the page: {report['errors']}"
        assert not report["widgetErrors"], f"widget failed to display: {report['widgetErrors']}"
        assert report["nWidgets"] == n_widgets, (
            f"{report['nWidgets']} of {n_widgets} widgets rendered ({report['loading']} still loading)")
        static = [c for c in report["charts"] if c["kind"] == "static"]
        assert len(static) == n_static, f"{len(static)} of {n_static} static charts rendered"
        broken = [c for c in report["charts"] if not c["ok"]]
        assert not broken, f"{len(broken)} chart(s) not drawn: {[c['text'] for c in broken]}"

        if n_widgets:
            with_chart = [o for o in page.query_selector_all(".jp-Notebook .jp-OutputArea-output")
                          if o.query_selector(":scope > .jupyter-widgets")
                          and o.evaluate(CHART_STATE_JS)]
            assert with_chart, "no widget in this notebook draws a chart"
            with_chart[0].scroll_into_view_if_needed()
            changed = _change_one_control(page, with_chart[0])
            page.wait_for_function(ALL_RAN_JS, timeout=60_000)  # callbacks finished
            assert not page.query_selector_all(
                ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"), \
                "changing a control produced an error output"
            if drive:
                drove = drive_explorers(page, kernel_errors,
                                        idle=lambda: lab.kernel_idle(path.name))
                record = drive if callable(drive) else None
                if record:
                    record(drove)
                narrow = overflow_at(page, NARROW_VIEWPORT)
                assert not narrow, f"at {NARROW_VIEWPORT[0]}×{NARROW_VIEWPORT[1]}: {narrow}"
        assert not page_errors, f"JavaScript errors in the page: {page_errors}"
        assert not blocked, f"the page tried to reach other hosts: {sorted(set(blocked))}"
    finally:
        try:
            page.screenshot(path=str(shot))
        finally:
            page.close()
            lab.shutdown_kernels()
    return changed



# --- as a learner uses it ----------------------------------------------------------------------

_ERROR_FRAME = re.compile(rb'"msg_type":\s*"error"|"name":\s*"stderr"')


def _kernel_error(payload, sink: list[str]) -> None:
    """Collect kernel ``error`` and ``stderr`` messages from a websocket frame: what JupyterLab
    shows in its log console when no cell owns the output (a widget callback's exception)."""
    data = payload.encode() if isinstance(payload, str) else payload
    # "No such comm": the page asking for the widgets of the stored outputs, before Run All
    if _ERROR_FRAME.search(data) and b"No such comm" not in data:
        sink.append(data[-600:].decode("utf-8", "replace"))


# Every control of every explorer (.tl-explorer, see widgets.base) with its kind and label.
CONTROLS_JS = r"""
() => [...document.querySelectorAll('.jp-Notebook .tl-explorer')].map((ex, i) => {
  ex.dataset.tlIndex = i;
  return [...ex.querySelectorAll('.widget-inline-hbox, .widget-checkbox')]
      .filter(c => !c.classList.contains('tl-readout')).map((c, j) => {
    c.dataset.tlControl = `${i}-${j}`;
    const label = (c.querySelector('.widget-label') || c).innerText.trim();
    const cell = c.closest('.tl-slider');
    const readout = cell ? cell.querySelector('.tl-readout input') : null;
    if (readout) readout.dataset.tlReadout = `${i}-${j}`;
    const kind = c.querySelector('.noUi-handle') ? 'slider'
      : c.querySelector('select') ? 'select'
      : c.querySelector('input[type=checkbox]') ? 'checkbox'
      : c.querySelector('input[type=text], input[type=number]') ? 'text' : null;
    const disabled = !!c.querySelector('input:disabled, select:disabled, .noUi-target[disabled]');
    const number = c.classList.contains('tl-number');
    return {id: `${i}-${j}`, label, kind, disabled, number, readout: !!readout};
  }).filter(c => c.kind);
})
"""

# What the explorer shows (text, and a fingerprint of its drawn chart), to see that it reacted.
STATE_JS = r"""
(i) => {
  const ex = document.querySelector(`.tl-explorer[data-tl-index="${i}"]`);
  const root = ex.parentElement.closest('.jupyter-widgets') || ex;
  const svg = ex.querySelector('svg.marks, canvas.marks');
  let h = 0;
  const s = (svg ? (svg.tagName === 'CANVAS' ? svg.toDataURL() : svg.innerHTML) : '') + root.innerText;
  for (let k = 0; k < s.length; k++) h = (h * 31 + s.charCodeAt(k)) | 0;
  return `${s.length}:${h}`;
}
"""

# Text of the explorer's error boxes, and whether anything sticks out of the notebook column.
CHECK_JS = r"""
(i) => {
  const ex = document.querySelector(`.tl-explorer[data-tl-index="${i}"]`);
  const root = ex.parentElement.closest('.jupyter-widgets') || ex;
  const out = ex.closest('.jp-OutputArea-output');
  const edge = out.getBoundingClientRect().right;
  const wide = [...root.querySelectorAll('*')].filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right > edge + 1 && getComputedStyle(e).visibility !== 'hidden';
  }).map(e => `${e.className || e.tagName} ${Math.round(e.getBoundingClientRect().right - edge)} px`);
  const errors = [...root.querySelectorAll('.widget-html-content')]
    .map(e => e.innerText).filter(t => t.includes('⚠'));
  // labels cut to "…", and menus too narrow for the option they show (its text, measured in
  // the menu's font, plus ~28 px of padding and arrow)
  const ctx = document.createElement('canvas').getContext('2d');
  const cut = [...root.querySelectorAll('.widget-label')]
    .filter(l => l.offsetParent && l.innerText.trim() && l.scrollWidth > l.clientWidth + 1)
    .map(l => `label ${l.innerText.trim()}`);
  for (const sel of root.querySelectorAll('select')) {
    const o = sel.options[sel.selectedIndex];
    if (!o || !sel.offsetParent) { if (sel.offsetParent) cut.push(`menu shows no value`); continue; }
    const st = getComputedStyle(sel);
    ctx.font = `${st.fontSize} ${st.fontFamily}`;
    if (ctx.measureText(o.text).width + 28 > sel.clientWidth) cut.push(`menu ${o.text}`);
  }
  // issue 42: no control past its grid's box (it cut the right-most control's border)
  for (const grid of root.querySelectorAll('.widget-gridbox')) {
    const g = grid.getBoundingClientRect();
    const box = grid.parentElement.getBoundingClientRect();
    if (g.right > box.right + 0.5) cut.push(`a control grid ${Math.round(g.right - box.right)} px wider than its box`);
    for (const c of grid.children) {
      const r = c.getBoundingClientRect();
      if (r.width > 0 && r.right > g.right + 0.5) cut.push(`control ${c.innerText.trim().slice(0, 20)} ${Math.round(r.right - g.right)} px past its grid`);
    }
  }
  // issue 42: chart text past the chart's edge (clipped), and a chart that draws no mark
  const clipped = [], empty = [];
  for (const svg of root.querySelectorAll('svg.marks')) {
    const b = svg.getBoundingClientRect();
    if (b.width < 10) continue;
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (!t.textContent.trim() || r.width === 0 || t.getAttribute('opacity') === '0') continue;
      const past = Math.max(b.left - r.left, r.right - b.right, b.top - r.top, r.bottom - b.bottom);
      if (past > 1) clipped.push(`chart text '${t.textContent.trim().slice(0, 40)}' ${Math.round(past)} px past the chart`);
    }
    if (!svg.querySelector('g.role-mark path, g.role-mark line, g.role-mark rect, g.role-mark circle, g.role-mark text'))
      empty.push('a chart without a mark');
  }
  return {errors, cut, clipped, empty, overflow: out.scrollWidth > out.clientWidth + 1 ? [`output ${out.scrollWidth} > ${out.clientWidth}`, ...wide.slice(0, 3)] : wide.slice(0, 3),
          traceback: /Traceback \(most recent call last\)/.test(root.innerText)};
}
"""

REACT_TIMEOUT_MS = 15_000  # one learner action reaching the explorer's output, on 2 busy cores


def _control(page, cid):
    return page.query_selector(f'[data-tl-control="{cid}"]')


def _learner_actions(page, control: dict) -> list[tuple[str, bool]]:
    """The actions for one control: (description, is a bad value); each is applied lazily."""
    kind = control["kind"]
    if kind == "slider":
        # ends at the top: a slider at 0 (steps, spares) can make the next controls irrelevant,
        # which is no reaction to test for; then text typed into its readout (ipywidgets' own
        # clamped it: "50%" became the maximum), a bad value and the value it showed
        typed = [("type 50%", False)] if control["label"].endswith("%") else []
        return [("Home", False), ("End", False)] + ([*typed, ("1e30", True), ("restore", False)]
                                                    if control.get("readout") else [])
    if kind == "select":  # each control ends where it began: the next one is tried from the
        return [("last option", False), ("first option", False), ("restore", False)]  # defaults
    if kind == "checkbox":
        return [("toggle", False), ("toggle", False)]
    if not control["number"]:  # free text (a search): something else, then back
        return [("zzz", False), ("restore", False)]
    return [("0", False), ("abc", True), ("restore", False)]


def _apply(page, cid: str, kind: str, action: str, original: dict) -> bool:
    """Do one action; False when it would not change the control's value."""
    c = _control(page, cid)
    readout = page.query_selector(f'[data-tl-readout="{cid}"]') if kind == "slider" else None
    if readout is not None:
        original.setdefault(cid, readout.input_value())  # the value shown before the first action
    if kind == "slider" and action not in ("Home", "End"):  # typed into its readout
        field = readout
        if field is None or field.is_disabled():
            return False
        text = original.get(cid) if action == "restore" else action.removeprefix("type ")
        if text is None or field.input_value() == text:
            return False
        field.fill(text)
        field.press("Enter")
        return True
    if kind == "slider":
        handle = c.query_selector(".noUi-handle")
        before = handle.get_attribute("aria-valuenow")
        handle.focus()
        handle.press(action)
        return handle.get_attribute("aria-valuenow") != before
    if kind == "select":
        select = c.query_selector("select")
        if select.is_disabled():
            return False
        options = select.evaluate("s => [...s.options].map(o => o.value)")
        original.setdefault(cid, select.evaluate("s => s.value"))
        target = {"last option": options[-1], "first option": options[0]}.get(action, original[cid])
        if target not in options or select.evaluate("s => s.value") == target:
            return False
        select.select_option(target)
        return True
    if kind == "checkbox":
        c.query_selector("input[type=checkbox]").click()
        return True
    field = c.query_selector("input[type=text], input[type=number]")
    if field.is_disabled():  # another control's setting made the box irrelevant
        return False
    if action == "restore":
        text = original.get(cid)
    else:
        original.setdefault(cid, field.input_value())
        text = action
    if field.input_value() == text:
        return False
    field.fill(text)
    field.press("Enter")
    return True


def _settle(page, i: int, quiet_ms: int = 150, timeout_s: float = 20.0, idle=None) -> None:
    """Wait until the kernel is idle (``idle()``, from the server's API: a widget callback is a
    comm message, which the page's execution indicator does not show) and explorer ``i`` has
    stopped changing for ``quiet_ms``."""
    deadline = time.monotonic() + timeout_s
    last = page.evaluate(STATE_JS, i)
    while time.monotonic() < deadline:
        page.wait_for_timeout(quiet_ms)
        now = page.evaluate(STATE_JS, i)
        if now == last and (idle is None or idle()):
            return
        last = now


#: a 1280×800 window with the file browser open: an 848 px notebook column (1440×900: 1,008 px)
NARROW_VIEWPORT = (1280, 800)


def overflow_at(page, viewport: tuple[int, int]) -> list[str]:
    """What sticks out of the notebook column in a window of ``viewport``, explorer by explorer
    (the window is set back to 1440×900 after)."""
    page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    try:
        page.wait_for_timeout(600)  # JupyterLab lays the panels out again
        column = page.evaluate("() => document.querySelector('.jp-Notebook .jp-OutputArea-output')"
                               "?.getBoundingClientRect().width")
        found = []
        for i in range(len(page.query_selector_all(".jp-Notebook .tl-explorer[data-tl-index]"))):
            check = page.evaluate(CHECK_JS, i)
            if check["overflow"]:
                found.append(f"explorer {i} (output area {column:.0f} px): {check['overflow']}")
        return found
    finally:
        page.set_viewport_size({"width": 1440, "height": 900})


def drive_explorers(page, kernel_errors: list[str], idle=None) -> list[str]:
    """Every control of every explorer in the page, as a learner: extremes and one bad value."""
    problems: list[str] = []
    done: list[str] = []
    explorers = page.evaluate(CONTROLS_JS)
    for i, controls in enumerate(explorers):
        first = page.query_selector(f'.tl-explorer[data-tl-index="{i}"]')
        first.scroll_into_view_if_needed()
        check = page.evaluate(CHECK_JS, i)
        if check["overflow"]:
            problems.append(f"explorer {i}: sticks out of the column: {check['overflow']}")
        if check["cut"]:
            problems.append(f"explorer {i}: text cut: {check['cut']}")
        if check["clipped"]:
            problems.append(f"explorer {i}: {check['clipped'][:3]}")
        original: dict = {}
        for control in controls:
            if control["disabled"]:
                continue
            for action, bad in _learner_actions(page, control):
                before = page.evaluate(STATE_JS, i)
                n_kernel_errors = len(kernel_errors)
                if not _apply(page, control["id"], control["kind"], action, original):
                    continue
                what = f"explorer {i}, {control['label']!r} → {action}"
                done.append(what)
                try:
                    page.wait_for_function(f"([i, before]) => ({STATE_JS})(i) !== before",
                                           arg=[i, before], timeout=REACT_TIMEOUT_MS)
                    reacted = True
                except Exception:  # noqa: BLE001 - playwright TimeoutError: judged below
                    reacted = False
                _settle(page, i, idle=idle)
                reacted = reacted or page.evaluate(STATE_JS, i) != before
                check = page.evaluate(CHECK_JS, i)
                if check["traceback"]:
                    problems.append(f"{what}: a traceback in the page")
                if len(kernel_errors) > n_kernel_errors:
                    problems.append(f"{what}: an error went to the log console: {kernel_errors[-1][-300:]}")
                if action == "type 50%":
                    handle = _control(page, control["id"]).query_selector(".noUi-handle")
                    field = page.query_selector(f'[data-tl-readout="{control["id"]}"]')
                    now = float(handle.get_attribute("aria-valuenow"))
                    lo, hi = (float(handle.get_attribute(a)) for a in ("aria-valuemin", "aria-valuemax"))
                    unread = [e for e in check["errors"] if control["label"] in e]
                    if lo <= 50 <= hi and (now != 50 or unread or float(field.input_value()) != 50):
                        problems.append(f"{what}: the slider is at {now} (readout "
                                        f"{field.input_value()!r}, errors {check['errors']})")
                if bad and not any(control["label"] in e and action in e for e in check["errors"]):
                    problems.append(f"{what}: no inline message naming the control: {check['errors']}")
                if not reacted and not check["errors"]:
                    shown = page.evaluate("(i) => document.querySelector(`.tl-explorer[data-tl-index=\"${i}\"]`)"
                                          ".innerText.replace(/\\s+/g, ' ').slice(-500)", i)
                    problems.append(f"{what}: the output did not change and no error is shown ({shown!r})")
                if check["overflow"]:
                    problems.append(f"{what}: sticks out of the column: {check['overflow']}")
                if check["clipped"]:  # issue 42
                    problems.append(f"{what}: {check['clipped'][:3]}")
                if check["empty"] and not check["errors"]:
                    problems.append(f"{what}: {check['empty'][0]} and no message")
                if action == "restore" and any(control["label"] in e for e in check["errors"]):
                    problems.append(f"{what}: an error about it stays after the value it had was put back "
                                    f"(a stale error): {check['errors']}")
    assert not problems, f"{len(problems)} problem(s) in {len(done)} learner actions:\n" + "\n".join(problems[:40])
    return done


# --- the learner's JupyterLab (issue 42: a newcomer's first hour) -------------------------------

LEARNER_UI_JS = r"""
() => ({
  menus: document.querySelector('.lm-MenuBar') ? document.querySelector('.lm-MenuBar').innerText : '',
  panels: [...document.querySelectorAll('.jp-SideBar .lm-TabBar-tab')].map(t => t.title || t.innerText).join(' | '),
  toolbar: [...document.querySelectorAll('.jp-NotebookPanel-toolbar [title], .jp-NotebookPanel-toolbar [data-command]')]
    .map(t => (t.title || '') + ' ' + (t.dataset.command || '')).join(' | '),
  dirty: [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-dirty')].map(t => t.innerText),
  current: (document.querySelector('.jp-mod-current .lm-TabBar-tabLabel, .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel')
            || {innerText: ''}).innerText,
})
"""

#: the chapters opened as a learner: the first, one in the middle, the last
LEARNER_CHAPTERS = ("00_start_here.ipynb", "03_topology_collectives.ipynb", "11_capstone.ipynb")


def _open_as_learner(lab: Lab, page, name: str) -> dict:
    page.goto(lab.url(name))
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=SETTLE_TIMEOUT_MS)
    lab.wait_kernel_idle(name, page)
    page.wait_for_timeout(2500)  # the kernel's info reply reached the page and was applied
    return page.evaluate(LEARNER_UI_JS)


def test_learner_lab_has_no_nbgrader_ui_opens_chapters_unmodified_and_contents_works(tmp_path, playwright_driver):
    """A fresh clone opened as a learner (``tools/course.py lab``'s configuration): no nbgrader
    menu, panel or button; no chapter marked modified by opening it (its kernel's version in the
    metadata); every chapter's first link, "Contents", opens chapter 00's chapter list. The same
    server without the learner configuration shows nbgrader's menu and marks chapters modified:
    the check can fail."""
    pw = playwright_driver
    seen = {}
    for edition, config in (("learner", ROOT / "config" / "learner"), ("plain", None)):
        (tmp_path / edition).mkdir()
        lab = Lab(tmp_path / edition, windowing_mode=None, config_path=config)
        try:
            for name in LEARNER_CHAPTERS:
                shutil.copy(ROOT / "notebooks" / name, lab.root / name)
            chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = chromium.new_context(viewport={"width": 1440, "height": 900}).new_page()
                page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
                seen[edition] = [_open_as_learner(lab, page, name) for name in LEARNER_CHAPTERS[:2]]
                if edition == "learner":
                    page.click(".jp-Notebook .jp-MarkdownCell a:has-text('Contents')")
                    page.wait_for_function("() => [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-current')]"
                                           ".some(t => t.innerText.includes('00_start_here'))", timeout=30_000)
                    seen["contents"] = True
            finally:
                chromium.close()
            lab.shutdown_kernels()
        finally:
            lab.stop()
        if edition == "learner":  # nothing was saved over a chapter either
            assert all((lab.root / n).read_bytes() == (ROOT / "notebooks" / n).read_bytes()
                       for n in LEARNER_CHAPTERS)
    for ui in seen["learner"]:
        assert "nbgrader" not in (ui["menus"] + ui["panels"] + ui["toolbar"]).lower(), ui
        assert "Create Assignment" not in ui["panels"] and not ui["dirty"], ui
    assert seen["contents"]
    plain = seen["plain"]
    assert any("nbgrader" in (ui["menus"] + ui["panels"]).lower() for ui in plain), plain
    assert any(ui["dirty"] for ui in plain), plain
