"""Every registered widget (all chapters) keeps the explorer contract of ``widgets.base``:

* each benchmarked control change updates the model and the chart without an error;
* any exception from reading the controls, ``compute``, ``render`` or ``describe`` is shown
  inline, and the explorer is visibly stale (summary and chart dimmed) until a good input;
* every number box reads ``1e6`` and the units it names, and rejects what it cannot read with a
  message that names the box's label and echoes what was typed, in the box's unit;
* controls the current settings ignore are disabled, with the reason as their tooltip;
* labels are never cut, carry real tooltips, and the controls wrap inside the notebook column;
  every menu shows its value.

Timing is measured by tools/benchmark.py, not asserted here."""

import importlib
import pkgutil
import re

import altair as alt
import ipywidgets as W
import pandas as pd
import pytest

import trainium_lab.widgets as widgets_pkg
from trainium_lab.widgets.base import (BENCHMARKS, DEFAULT, FULL_ROW, WIDGET_MARGIN_PX, Explorer, FieldError, NumberText,
                                       error_html, in_field_words, number, read_values)

for _info in pkgutil.iter_modules(widgets_pkg.__path__):
    importlib.import_module(f"trainium_lab.widgets.{_info.name}")

FACTORIES = sorted(BENCHMARKS.items())
IDS = [n for n, _ in FACTORIES]
#: the notebook column of a 1440 px window with the file browser open, and of a 1280 px one
COLUMN_PX, NARROW_COLUMN_PX = 1008, 848


def _built():
    """Each registered explorer, built once per test module (building takes ~0.1-1 s)."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = BENCHMARKS[name][0]()
        return cache[name]
    return get


_explorer = _built()


def _search_inputs(ex):
    search = getattr(ex, "search", None)
    return {} if search is None else search.controls


@pytest.mark.parametrize("name, entry", FACTORIES, ids=IDS)
def test_every_benchmarked_change_updates_the_chart(name, entry):
    factory, changes = entry
    assert changes, f"{name} registers no control change"
    explorer = factory()
    assert isinstance(explorer, Explorer)
    assert explorer.last_error is None, explorer.last_error
    for control, value in changes:
        before_spec = explorer.chart.spec if explorer.chart is not None else None
        before_summary = explorer.summary.value
        before = explorer.updates
        explorer.controls[control].value = value
        assert explorer.last_error is None, f"{name}: {control}={value!r}: {explorer.last_error}"
        assert explorer.updates == before + 1, f"{name}: {control} did not trigger an update"
        after_spec = explorer.chart.spec if explorer.chart is not None else None
        assert (after_spec != before_spec) or (explorer.summary.value != before_summary), \
            f"{name}: changing {control} to {value!r} changed neither chart nor summary"


# --------------------------------------------------------------------------- the base contract


def _toy(describe=None, render=None, **kwargs):
    def compute(x):
        if x < 0:
            raise ValueError(f"x_s must be a finite number >= 0, got {x * 60.0!r}")
        return pd.DataFrame({"a": [x]})

    return Explorer({"x": W.FloatText(value=1.0, description="wait (min)")}, compute,
                    render or (lambda df: alt.Chart(df).mark_bar().encode(x="a:Q")),
                    describe or (lambda df: f"a = {df.a[0]}"), **kwargs)


def test_value_errors_are_inline_in_the_fields_words_and_the_explorer_is_stale():
    ex = _toy()
    good = ex.chart.spec
    assert not ex.stale and "tl-stale" not in ex.summary._dom_classes
    ex.controls["x"].value = -1.0
    # the model's message, in the box's label and unit (-60 s is -1 min)
    assert ex.last_error == "wait (min) must be a finite number >= 0; got -1"
    assert "wait (min) must be a finite number &gt;= 0; got -1" in ex.error.value
    assert "last good input" in ex.error.value
    assert ex.chart.spec == good and ex.summary.value == "a = 1.0"
    assert ex.stale and "tl-stale" in ex.summary._dom_classes
    assert "tl-stale" in ex._chart_box._dom_classes
    ex.controls["x"].value = 2.0
    assert ex.error.value == "" and ex.chart.spec != good and not ex.stale
    assert "tl-stale" not in ex._chart_box._dom_classes


@pytest.mark.parametrize("where", ["describe", "render", "to_dict"])
@pytest.mark.parametrize("exc", [ValueError("n_bytes must be below 1e+30, got 4e+35"),
                                 ZeroDivisionError("float division by zero")])
def test_every_exception_from_compute_render_or_describe_is_shown_inline(where, exc):
    """Chapter 03's latency sweep with α = 1e30 raised in ``describe``, which the explorer did not
    catch: the error went to the log console and the page kept the previous input's result."""
    def fail_at(point):
        def fn(df):
            if df.a[0] > 5:
                if point == "to_dict":
                    return alt.Chart(df).mark_bar().encode(x="no_such_field:Q").properties(
                        width=object())  # not JSON: to_dict raises
                raise exc
            return f"a = {df.a[0]}" if point == "describe" else alt.Chart(df).mark_bar().encode(x="a:Q")
        return fn

    ex = (_toy(describe=fail_at("describe")) if where == "describe"
          else _toy(render=fail_at(where)))
    ex.controls["x"].value = 9.0
    assert ex.last_error and ex.stale, where
    assert "⚠" in ex.error.value
    if where != "to_dict" and isinstance(exc, ValueError):
        assert "wait (min) = 9" in ex.last_error and "4e+35" in ex.last_error
    if where != "to_dict" and not isinstance(exc, ValueError):
        assert "internal error (ZeroDivisionError" in ex.last_error and "bug" in ex.last_error
    assert "Traceback" not in ex.error.value
    ex.controls["x"].value = 3.0
    assert ex.last_error is None and not ex.stale


def test_an_error_at_build_time_is_shown_without_a_chart():
    ex = Explorer({"x": W.FloatText(value=-1.0, description="x")},
                  lambda x: (_ for _ in ()).throw(ValueError("x must be >= 0, got -1.0")),
                  lambda r: None)
    assert ex.last_error and "⚠" in ex.error.value and ex.chart is None


def test_error_html_escapes():
    assert "&lt;b&gt;" in error_html("<b>")


# --------------------------------------------------------------------------- number boxes


@pytest.mark.parametrize("typed, expected, note", [
    ("1e6", 1e6, False), ("  42 ", 42.0, False), ("-3.5", -3.5, False),
    ("24 h", 1.0, True), ("90 s", 90 / 86400, True), ("3 d", 3.0, False), ("2 days", 2.0, True),
])
def test_number_box_reads_what_people_type(typed, expected, note):
    box = number("chip MTBF (d)", typed)
    value, said = box.read()
    assert value == pytest.approx(expected)
    assert (said is not None) == note
    if note:
        assert typed.strip() in said and "d" in said


@pytest.mark.parametrize("label, typed, expected", [
    ("ckpt GB/s", "10 TB/s", 10_000.0), ("FSx (GiB)", "24 TiB", 24 * 1024.0),
    ("params (B)", "2T", 2000.0), ("params (B)", "70", 70.0), ("MFU %", "50%", 50.0),
    ("MFU %", "40", 40.0), ("α (µs)", "1 ms", 1000.0), ("MB per rank", "1 GB", 1000.0),
])
def test_number_box_converts_the_units_the_course_parser_reads(label, typed, expected):
    assert number(label, typed).read()[0] == pytest.approx(expected)


def test_integer_box_keeps_scientific_notation():
    """ipywidgets' IntText dropped the 'e' as it was typed: 1e6 became 16."""
    box = number("m", "1e6", integer=True)
    assert box.read() == (1_000_000, None) and isinstance(box.read()[0], int)
    with pytest.raises(FieldError, match=r"^m must be a whole number; got 1\.5$"):
        number("m", "1.5", integer=True).read()


@pytest.mark.parametrize("label, typed, message", [
    ("chip MTBF (d)", "abc", r"^chip MTBF \(d\): cannot read 'abc' as a number in d$"),
    ("chip MTBF (d)", "", r"^chip MTBF \(d\): type a number \(the field is empty\)$"),
    ("chip MTBF (d)", "10 TBps", r"^chip MTBF \(d\): cannot read '10 TBps': 'TBps' is not a unit"),
    ("MFU %", "0.4 frac", r"^MFU %: cannot read '0.4 frac'; type a percentage"),
    ("TP (ranks)", "8 GiB", r"^TP \(ranks\): cannot read '8 GiB': 'GiB' is not a unit of this field; "
                             "type a plain number$"),
    ("chip MTBF (d)", "1e30", r"^chip MTBF \(d\): '1e30' is too large; this field takes values below 1.16e\+25 d$"),
    ("chip MTBF (d)", "NaN", r"^chip MTBF \(d\): cannot read 'NaN'"),
])
def test_number_box_rejects_what_it_cannot_read_naming_its_label(label, typed, message):
    with pytest.raises(FieldError, match=message):
        number(label, typed).read()


def test_number_box_bounds_are_said_in_the_boxs_unit():
    box = number("chip MTBF (d)", "-1", minimum=0, exclusive_minimum=True)
    with pytest.raises(FieldError, match=r"^chip MTBF \(d\) must be > 0; got -1$"):
        box.read()
    with pytest.raises(FieldError, match=r"^MFU % must be in \(0, 100\]; got 140$"):
        number("MFU %", "140", minimum=0, maximum=100, exclusive_minimum=True).read()


def test_model_messages_are_said_in_the_fields_unit():
    box = number("FSx (GiB)", "-1")
    said = in_field_words("storage_bytes must be in (0, 1e+21], got -1073741824.0", box)
    assert said == "FSx (GiB) must be in (0, 9.31323e+11]; got -1"
    # a message about something else than the typed value keeps the model's words, after the field's,
    # with the model's parameter names said as the widgets label them (issue 42: tp -> TP)
    assert in_field_words("tp must divide 64, got 3", number("DP", "2")) == \
        "DP = 2: TP must divide 64, got 3"


def test_dropdown_default_is_shown_and_handed_over_as_none():
    from trainium_lab.widgets.base import lnc_dropdown

    menu = lnc_dropdown()
    assert menu.value == DEFAULT and menu.label == "chip default" and menu.index == 0
    assert read_values({"lnc": menu})[0] == {"lnc": None}


# --------------------------------------------------------------------------- every explorer


def _numeric_boxes(ex):
    boxes = [(name, c, "control") for name, c in ex.controls.items() if isinstance(c, NumberText)]
    boxes += [(name, c, "input") for name, c in _search_inputs(ex).items() if isinstance(c, NumberText)]
    return boxes


def _message_after(ex, kind):
    if kind == "control":
        return ex.last_error
    ex.run()
    status = ex.search.status.value
    return None if "⚠" not in status else re.sub("<[^>]+>", "", status).replace("&#x27;", "'")


def test_number_boxes_are_everywhere_there_are_numbers():
    """No ipywidgets FloatText/IntText survives in an explorer (their front end rewrites what is
    typed); there is at least one number box per chapter that has numbers to type."""
    boxes = 0
    for name, _ in FACTORIES:
        ex = _explorer(name)
        for c in [*ex.controls.values(), *_search_inputs(ex).values()]:
            assert not isinstance(c, (W.FloatText, W.IntText)) or isinstance(c, NumberText), \
                f"{name}: {c.description} is an ipywidgets number box"
        boxes += len(_numeric_boxes(ex))
    assert boxes >= 40


@pytest.mark.parametrize("name", IDS)
def test_every_number_box_names_its_label_for_bad_input(name):
    """Every number box of every explorer, given text it cannot read, a negative number and an
    enormous one: each either computes, or shows a message that names the box's label, echoes
    what was typed, and never shows the value converted to base units (chip MTBF (d) = -1 said
    "chip_mtbf_s ... got -86400.0")."""
    ex = _explorer(name)
    for control, box, kind in _numeric_boxes(ex):
        if box.disabled:
            continue
        original = box.value
        for typed in ("abc", "-1", "1e30", "2.5e3"):
            box.value = typed
            message = _message_after(ex, kind)
            if kind == "control" and message is None:
                continue  # accepted: the explorer computed with it
            if message is None:
                continue
            assert box.description in message, f"{name}: {control}={typed!r}: {message}"
            assert typed in message, f"{name}: {control}={typed!r} not echoed: {message}"
            if box.size != 1 and typed == "-1":
                assert repr(-box.size) not in message and f"{-box.size:g}" not in message, message
            if kind == "control":
                assert ex.stale
        box.value = original
        assert _message_after(ex, kind) is None, f"{name}: {control} back to {original!r}"


def test_mfu_is_a_percentage_everywhere():
    for name, _ in FACTORIES:
        ex = _explorer(name)
        for c in [*ex.controls.values(), *_search_inputs(ex).values()]:
            if "MFU" in (c.description or ""):
                assert c.description.endswith("%"), f"{name}: {c.description}"


def test_ignored_controls_are_disabled_with_the_reason():
    from trainium_lab.widgets.reliability import checkpoint_explorer
    from trainium_lab.widgets.sizing import sizing_calculator

    calc = sizing_calculator()
    box = calc.controls["n_params_billion"]
    assert box.disabled and "preset" in box.tooltip
    rec = calc.controls["recompute"]
    assert not rec.disabled
    calc.controls["model"].value = "custom"
    assert not box.disabled and box.tooltip.startswith("custom (B)")
    # a custom size has no layer shape: no activation estimate for recompute to change (the
    # browser test found a learner's recompute menu doing nothing after choosing "custom")
    assert rec.disabled and "no layers to recompute" in rec.tooltip
    assert "Activations" not in calc.summary.value
    box.value = "-1"
    assert calc.last_error == "custom (B) must be > 0; got -1"
    calc.controls["model"].value = "llama3-8b"  # the ignored box no longer blocks the explorer
    assert calc.last_error is None and box.disabled

    ck = checkpoint_explorer()
    assert ck.controls["snapshot_s"].disabled and "synchronous" in ck.controls["snapshot_s"].tooltip
    ck.controls["mode"].value = "async"
    assert not ck.controls["snapshot_s"].disabled

    from trainium_lab.widgets.reliability import resume_explorer

    rs = resume_explorer()
    assert not rs.controls["swap_min"].disabled
    rs.controls["n_spares"].value = 0
    assert rs.controls["swap_min"].disabled and "no spare" in rs.controls["swap_min"].tooltip


def test_outline_group_out_of_range_is_rejected_not_clamped():
    from trainium_lab.widgets.topology import placement_explorer

    ex = placement_explorer()
    ex.controls["highlight"].value = "130"
    assert re.fullmatch(r"outline group must be between -1 \(none\) and \d+ .*; got 130", ex.last_error)


def test_worksheet_deadline_must_not_be_negative_and_disables_the_count():
    from trainium_lab.widgets.planning import planning_worksheet

    ws = planning_worksheet()
    ws.inputs["deadline_days"].value = "-1"
    ws.run()
    assert "deadline (d) must be ≥ 0; got -1" in ws.status.value and ws.stale
    ws.inputs["deadline_days"].value = "60"
    assert ws.inputs["n_systems"].disabled and "deadline" in ws.inputs["n_systems"].tooltip


@pytest.mark.parametrize("factory", ["layouts.planner_explorer", "planning.planning_worksheet"])
def test_lnc_menu_shows_its_value_and_trainium3_plans(factory):
    """The LNC menu's option ("chip default", None) showed an empty box, then Trainium3 failed
    with "lnc must be given"; now the menu always shows a value, and Trainium3 plans at its
    default LNC, the inferred 2 of data/chips.csv (issue 26)."""
    ex = _explorer(factory)
    lnc = ex.inputs["lnc"]
    assert lnc.label == "chip default"
    trn3 = next(s for s in ex.inputs["system"].options if s.startswith("trn3"))
    ex.inputs["system"].value = trn3
    assert lnc.label == "chip default"
    ex.run()
    assert "⚠" not in ex.status.value, ex.status.value
    ex.inputs["system"].value = "trn2-ultraserver"
    assert [label for label, _ in lnc.options][0] == "chip default"


@pytest.mark.parametrize("factory", ["layouts.planner_explorer", "planning.planning_worksheet"])
def test_lnc_menu_without_a_chip_default_sets_2_and_says_so(factory, monkeypatch):
    """A chip whose data holds no default LNC (Trainium3 before issue 26's inferred default) is
    offered 1 and 2 only; a switch from "chip default" sets 2 and says so in the status line."""
    from trainium_lab import cores

    real = cores.resolve_lnc

    def without_trn3_default(chip, lnc=None):
        if lnc is None and str(chip).startswith("trn3"):
            raise ValueError("lnc must be given for Trainium3")
        return real(chip, lnc)

    monkeypatch.setattr(cores, "resolve_lnc", without_trn3_default)
    ex = _explorer(factory)
    lnc = ex.inputs["lnc"]
    assert lnc.label == "chip default"
    trn3 = next(s for s in ex.inputs["system"].options if s.startswith("trn3"))
    ex.inputs["system"].value = trn3
    assert lnc.value == 2 and lnc.label == "2" and "LNC set to 2" in ex.status.value
    assert "chip default" not in [label for label, _ in lnc.options]
    ex.inputs["system"].value = "trn2-ultraserver"
    assert [label for label, _ in lnc.options][0] == "chip default"


# --------------------------------------------------------------------------- labels and layout


def _all_controls(ex):
    return [*ex.controls.values(), *_search_inputs(ex).values()]


@pytest.mark.parametrize("name", IDS)
def test_labels_fit_carry_tooltips_and_menus_show_a_value(name):
    ex = _explorer(name)
    for c in _all_controls(ex):
        label = c.description or ""
        if not label:
            continue
        assert c.tooltip and c.tooltip != "null" and label.split(" (")[0] in c.tooltip, (name, label)
        if isinstance(c, (W.Checkbox, W.Button)):
            continue
        width = c.style.description_width
        px = int(width[:-2]) if width.endswith("px") else None
        # ~7 px per character of JupyterLab's 13 px UI font (measured: "chip MTBF (d)" 80 px)
        assert px is not None and px >= 7 * len(label), f"{name}: {label!r} gets {width}"
        if isinstance(c, W.Dropdown):
            assert c.index is not None and c.label, f"{name}: {label} shows no value"


@pytest.mark.parametrize("name", IDS)
def test_controls_wrap_inside_the_notebook_column(name):
    """The grid's columns are fixed-width cells that wrap (auto-fill), at most ``columns`` of
    them: whatever the page's width, no control sits past the column's edge; a cell fits the
    narrow (848 px) column."""
    ex = _explorer(name)
    grids = [ex.grid] + ([ex.search.grid] if hasattr(ex, "search") else [])
    for grid in grids:
        template = grid.layout.grid_template_columns
        m = re.fullmatch(r"repeat\(auto-fill, (\d+)px\)", template)
        assert m, f"{name}: {template}"
        assert int(m.group(1)) <= NARROW_COLUMN_PX - 100  # prompt and padding
        for c in grid.children:
            width = c.layout.width or ""
            if width.endswith("px") and int(width[:-2]) + 2 * WIDGET_MARGIN_PX <= int(m.group(1)):
                continue   # the control and its margins fit the track (issue 42: 2 px past it)
            if width.endswith("px"):  # a wide control: a row of its own, narrower than the column
                assert int(width[:-2]) <= NARROW_COLUMN_PX - 100, (name, c.description, width)
                assert c.layout.grid_area == FULL_ROW, (name, c.description, width)
            else:
                assert c.layout.grid_area == FULL_ROW and c.layout.max_width == "100%", \
                    (name, c.description, width)


# --------------------------------------------------------------------------- charts (their text: tests/test_charts_scenegraph.py)


# explorers that show a table or text, not a chart (checked below, so the list cannot go stale)
CHARTLESS = ("hardware.claims_explorer",)
CHARTED = [n for n in IDS if n not in CHARTLESS]


@pytest.mark.parametrize("name", CHARTLESS)
def test_chartless_explorers_draw_no_chart(name):
    assert _explorer(name).chart is None


@pytest.mark.parametrize("name", CHARTED)
def test_explorer_chart_fits_the_notebook_column(name):
    """Each explorer's chart, as vl-convert lays it out with the course font, is no wider than
    the output area of a 1,008 px notebook column (less the 64 px prompt)."""
    import vl_convert as vlc

    from trainium_lab.charts import base

    ex = _explorer(name)
    assert ex.chart is not None, f"{name} draws no chart: add it to CHARTLESS"
    base.register_fonts()
    width = vlc.vegalite_to_scenegraph(base.with_course_config(ex.chart.spec))["width"]
    assert width <= COLUMN_PX - 64, f"{name}: {width} px"


def test_roofline_menu_offers_only_the_chips_formats_and_says_when_it_changes():
    """01's dtype menu offered mxfp8/mxfp4/fp4 on Trainium2, which always failed."""
    from trainium_lab import roofline
    from trainium_lab.widgets.hardware import roofline_explorer

    ex = roofline_explorer()
    for chip in roofline.device_names():
        ex.controls["chip"].value = chip
        assert set(ex.controls["dtype"].options) <= set(roofline.device(chip).dense_flops_per_s)
        assert ex.last_error is None, (chip, ex.last_error)
    ex.controls["chip"].value = "trn3"
    ex.controls["dtype"].value = "mxfp8"
    ex.controls["chip"].value = "trn2"
    assert ex.controls["dtype"].value == "bf16" and "dtype set to bf16" in ex.notes.value


def test_placement_colours_never_repeat():
    """Up to ten groups: ten distinct categorical colours; beyond ten (where they used to
    repeat, group 10 as blue as group 0, and the legend was cut to "… 227 entries"): a
    sequential scale by group number with a gradient legend."""
    from trainium_lab import topology, views
    from trainium_lab.charts.topology import placement_chart

    for tp, dp, categorical in ((32, 8, True), (4, 64, False)):  # 8 and 64 TP groups
        p = topology.place(tp, 1, dp, system="trn2-ultraserver", lnc=2)
        chart = placement_chart(views.chip_map(p, "tp", 0), kind="tp")
        spec = chart.to_dict(validate=False)
        color = spec["layer"][0]["encoding"]["color"]
        if categorical:
            n = len(color["scale"]["domain"])
            assert color["type"] == "nominal" and len(set(color["scale"]["range"][:n])) == n == 8
        else:
            assert color["type"] == "quantitative" and color["scale"]["domain"] == [0, 63]
        assert "repeat" not in str(spec["title"])


# --- slider readouts: what is typed is read, or rejected, never clamped (issue 31 item 2) -------

def _sliders(ex):
    return [c for c in _all_controls(ex) if isinstance(c, (W.IntSlider, W.FloatSlider,
                                                           W.FloatLogSlider, W.SelectionSlider))]


@pytest.mark.parametrize("name", IDS)
def test_every_slider_has_a_typed_readout_that_reads_its_value(name):
    """ipywidgets' own readout reads "50%" as 50 and clamps it to the maximum, and "1e6" as 1:
    every slider's readout is the course's parsed box instead, showing the slider's value."""
    from trainium_lab.widgets.base import SliderReadout

    for s in _sliders(_explorer(name)):
        r = getattr(s, "tl_readout", None)
        assert isinstance(r, SliderReadout) and not s.readout, (name, s.description)
        assert r.read()[0] == pytest.approx(s.value) if not r.selection else r.read()[0] == s.value
        # a value between the steps is kept: the page's slider then updates on release only,
        # or it would move the value to the nearest step and send that back
        assert s.continuous_update == r.on_steps(s.value), (name, s.description, s.value)


def test_slider_readout_reads_percent_scientific_and_rejects_out_of_range():
    from trainium_lab.widgets.start import weights_explorer

    ex = weights_explorer()
    free, chips = ex.controls["reserve_pct"], ex.controls["n_chips"]
    free.tl_readout.value = "50%"  # ipywidgets' readout set 90 % (its maximum) for this
    assert free.value == 50 and ex.result.reserve_share == 0.5 and ex.last_error is None
    assert free.tl_readout.value == "50"
    chips.tl_readout.value = "1e1"
    assert chips.value == 10 and ex.result.n_chips == 10
    for box, typed, words in ((chips.tl_readout, "1e6", "chips must be in [1, 128]; got 1e6"),
                              (free.tl_readout, "95%", "kept free % must be in [0, 90]; got 95%"),
                              (free.tl_readout, "abc", "kept free %: cannot read 'abc'"),
                              (chips.tl_readout, "2.5", "chips must be a whole number; got 2.5"),
                              (chips.tl_readout, "10 TBps", "chips: cannot read '10 TBps'")):
        box.value = typed
        assert words in ex.last_error, (typed, ex.last_error)
        assert free.value == 50 and chips.value == 10, typed  # nothing moved
        assert ex.stale and "tl-stale" in ex.summary._dom_classes
    free.tl_readout.value = "33"  # between the 5 % steps: kept as typed, not rounded
    assert free.value == 33 and ex.result.reserve_share == 0.33 and ex.last_error is None
    assert not free.continuous_update and not ex.stale
    free.value = 40
    assert free.continuous_update and free.tl_readout.value == "40"


def test_selection_slider_readout_takes_an_option_or_says_which():
    from trainium_lab.widgets.serving import kv_cache_explorer

    ex = kv_cache_explorer()
    ctx = ex.controls["context_len"]
    ctx.tl_readout.value = "16384"
    assert ctx.value == 16384 and ex.last_error is None
    ctx.tl_readout.value = "3000"
    assert "context must be one of 512, 1024" in ex.last_error and ctx.value == 16384
    ctx.tl_readout.value = "abc"
    assert "got abc" in ex.last_error


def test_search_input_slider_readout_says_why_in_the_status_line():
    from trainium_lab.widgets.layouts import planner_explorer

    ex = planner_explorer()
    mfu = ex.inputs["mfu_pct"]
    mfu.tl_readout.value = "150%"
    assert "MFU % must be in [5, 100]; got 150%" in ex.status.value and mfu.value != 150
    mfu.tl_readout.value = "40%"
    assert mfu.value == 40 and "changed to 40" in ex.status.value


@pytest.mark.parametrize("name", IDS)
def test_every_slider_keeps_room_for_its_track(name):
    """Chapter 10's sliders were 54 px long (a 150 px label), 21 steps in 54 px: every slider
    keeps at least 120 px beside its label and readout."""
    for s in _sliders(_explorer(name)):
        width, label = s.layout.width, s.style.description_width
        assert width.endswith("px") and label.endswith("px"), (name, s.description)
        assert int(width[:-2]) - int(label[:-2]) >= 120, (name, s.description, width, label)


# --- menus offer only what the settings can compute (issue 31 item 6) -------------------------

def test_tile_menus_offer_only_tiles_that_fit_and_say_when_they_shrink():
    """With two buffers 7 of 8 tile_n widths (and 4 of 8 tile_m) always failed: now every
    option offered computes, for every chip, dtype and buffer count."""
    from trainium_lab.widgets.kernels import tile_explorer

    ex = tile_explorer()
    c = ex.controls
    for chip in ("trn1", "trn2", "trn3"):
        for dtype in c["dtype"].options:
            for buffers in c["buffers"].options:
                c["chip"].value, c["dtype"].value, c["buffers"].value = chip, dtype, buffers
                for name in ("tile_m", "tile_n"):
                    for option in c[name].options:
                        c[name].value = option
                        assert ex.last_error is None, (chip, dtype, buffers, name, option, ex.last_error)
                        assert ex.result.plan.fits
    c["chip"].value, c["dtype"].value, c["buffers"].value = "trn2", "bfloat16", 1
    c["tile_m"].value, c["tile_n"].value = 512, 1024
    c["buffers"].value = 3  # 512 × 1024 with three buffers does not fit: smaller, and said
    assert (c["tile_m"].value, c["tile_n"].value) != (512, 1024) and ex.last_error is None
    assert "does not fit PSUM and SBUF" in ex.notes.value


def test_ring_steps_follow_n_and_a_clamped_step_is_said():
    """Fewer participants shorten the step slider; ipywidgets clamps its value silently, the
    explorer says so, and the readout's range follows the slider."""
    from trainium_lab.widgets.topology import ring_stepper

    ex = ring_stepper(8)
    steps = ex.controls["step"]
    steps.tl_readout.value = "14"
    assert steps.value == 14 and ex.last_error is None
    ex.controls["n"].value = 4
    assert steps.value == 6 and "steps done set to 6" in ex.notes.value and ex.last_error is None
    steps.tl_readout.value = "7"
    assert "steps done must be in [0, 6]; got 7" in ex.last_error and steps.value == 6


# --------------------------------------------------------------------------- issue 42: the unit grid
# in a widget: the worksheet's "ckpt GB/s" box reads every spelling the CLI reads, case-sensitively

def test_unit_grid_in_a_widget_box():
    from test_units import AMBIGUOUS_RATES, RATE_GRID

    ex = _explorer("planning.planning_worksheet")
    box = ex.controls["ckpt_gb_per_s"]
    good = box.value
    for unit, size in RATE_GRID:
        box.value = f"25 {unit}"
        value, note = box.read()
        assert value == pytest.approx(25 * size / 1e9, rel=1e-12), unit
        assert "cannot read" not in ex.error.value and "two ways" not in ex.error.value, unit
    for unit in AMBIGUOUS_RATES:
        box.value = f"25{unit}"
        assert "ckpt GB/s" in ex.error.value and "reads two ways" in ex.error.value, unit
    box.value = good
    assert ex.error.value == ""


def test_planner_search_clears_its_error_when_the_previous_value_is_typed_again():
    # issue 42: 05's planner kept "MFU % must be in [5, 100]; got 1.5" after 29 was typed back
    from trainium_lab.widgets.base import _readouts

    ex = BENCHMARKS["layouts.planner_explorer"][0]()
    readout = next(r for r in _readouts(ex.search.controls) if r.label == "MFU %")
    before = ex.search.status.value
    previous = readout.value
    for bad in ("1.5", "abc"):
        readout.value = bad
        assert "⚠" in ex.search.status.value and "MFU %" in ex.search.status.value
        readout.value = previous
        assert "⚠" not in ex.search.status.value, ex.search.status.value
        assert ex.search.status.value == before


@pytest.mark.parametrize("factory, key, typed", [
    ("reliability.checkpoint_explorer", "write_s", ("0", "-1")),
    ("planning.planning_worksheet", "usd_per_hour", ("0", "-1")),
])
def test_zero_and_negative_get_the_same_bound(factory, key, typed):
    # issue 42: "write (s)" and "USD/inst-h" said "> 0" for 0 but "≥ 0" for -1
    ex = BENCHMARKS[factory][0]()
    said = []
    for t in typed:
        ex.controls[key].value = t
        said.append(re.sub(r"got .*", "", ex.last_error))
    assert said[0] == said[1] and "> 0" in said[0], said


@pytest.mark.parametrize("message, words", [
    ("lnc must be None or 1 for Trainium1: it has no logical-NeuronCore setting; got 2", "LNC must be 1 for"),
    ("tp × pp × dp × ep = 512 must be a whole number of trn3-gen2-ultraserver systems (576 ranks each at lnc=2); "
     "or pass n_systems", "TP × PP × DP × EP = 512 must be a whole number of trn3-gen2-ultraserver systems (576 "
     "ranks each at LNC 2)"),
    ("tp must divide n_heads (32) of Llama 3 8B, so each rank gets whole attention heads; got tp=64",
     "TP must divide the attention heads (32) of Llama 3 8B"),
    ("pp must be at most n_layers (126) of Llama 3 405B; got pp=1000000", "PP must be at most the layers (126)"),
    ("chip_mtbf_s: the job fails every 132 days", "the job fails every 132 days"),
    ("lnc must be one of 1, 2 for Trainium2 (or None for its default); got 3", "(or “chip default”)"),
])
def test_model_messages_reach_widgets_in_learner_words(message, words):
    from trainium_lab.widgets.base import learner_words

    said = learner_words(message)
    assert words in said, said
    assert not re.search(r"\b(n_heads|n_layers|n_systems|lnc|None|chip_mtbf_s|tp|pp)\b", said), said


def test_trn1_in_the_placement_menu_is_not_an_error():
    # issue 42: picking a Trn1 system failed at once: LNC stayed at 2
    ex = BENCHMARKS["topology.placement_explorer"][0]()
    ex.controls["tp"].value = "32"   # one trn1.32xlarge: 32 NeuronCores
    ex.controls["pp"].value = "1"
    ex.controls["dp"].value = "1"
    ex.controls["system"].value = "trn1.32xlarge"
    assert ex.controls["lnc"].value == 1 and ex.error.value == "", ex.error.value
    assert "LNC set to 1" in ex.notes.value


def test_integer_bounds_are_written_out():
    box = number("m", 1, integer=True, minimum=1, maximum=2**30)
    box.value = "0"
    with pytest.raises(FieldError, match=r"\[1, 1,073,741,824\]"):
        box.read()


@pytest.mark.parametrize("factory", ["layouts.planner_explorer", "planning.planning_worksheet"])
def test_trn1_in_the_planner_menus_offers_only_its_lnc(factory):
    ex = BENCHMARKS[factory][0]()
    lnc = ex.search.controls["lnc"]
    lnc.value = 2
    ex.search.controls["system"].value = "trn1.32xlarge"
    assert 2 not in [v for _, v in lnc.options] and lnc.value != 2
    assert "LNC set to" in ex.search.status.value


def test_mfu_readout_is_formatted_and_typing_it_back_keeps_the_value():
    # issue 42: the worksheet's MFU readout showed 28.7946
    ex = _explorer("planning.planning_worksheet")
    slider = ex.controls["mfu_pct"]
    readout = slider.tl_readout
    exact = slider.value
    assert readout.value == format(exact, slider.readout_format) and len(readout.value) <= 5, readout.value
    readout.value = readout.value + " "
    readout.value = readout.value.strip()
    assert slider.value == exact and ex.error.value == ""


@pytest.mark.parametrize("name", CHARTED)
def test_no_explorer_draws_an_empty_chart_at_its_slider_ends(name):
    """Issue 42: 03's latency sweep drew an empty chart with no message at n = 1. At each slider's
    ends, an explorer either draws data or says why (an error); never an empty chart in silence."""
    ex = BENCHMARKS[name][0]()
    for key, c in ex.controls.items():
        if not isinstance(c, (W.IntSlider, W.FloatSlider)) or isinstance(c, W.FloatLogSlider):
            continue
        start = c.value
        for end in (c.min, c.max):
            c.value = end
            if ex.last_error is None and ex.error.value == "":
                data = [v for v in (ex.spec or {}).get("datasets", {}).values() if v]
                rows = [r for d in data for r in d
                        if all(not isinstance(x, (int, float)) or x == x for x in r.values())]
                assert rows, f"{name}: {key} = {end} draws an empty chart without a message"
                if name == "topology.latency_sweep_explorer":
                    assert all(r.get("time_ms", 1) > 0 for d in data for r in d), (key, end)
        c.value = start


@pytest.mark.parametrize("name", CHARTED)
def test_live_charts_lay_out_again_after_each_update(name):
    """Issue 42: an update that swaps only data and title kept Vega's first layout, so a longer
    legend, title or axis labels were cut at the chart's edge (07's legend, 02's title, 03's axis
    labels in the browser test). The live chart's spec asks Vega to lay out again (``resize``)."""
    ex = _explorer(name)
    spec = ex.chart.spec
    assert isinstance(spec.get("autosize"), dict) and spec["autosize"].get("resize") is True, spec.get("autosize")


def test_a_menu_bringing_new_legend_words_redraws_but_a_slider_keeps_the_fast_path():
    """Issue 42: 02's FP8 legend entries were cut at the chart's edge after a menu change (Vega
    lays a view out when it draws a spec); 07's slider adds "chosen: 5" on every press and must
    keep the data-only update (a full redraw took its browser median from 32 to 50 ms)."""
    ex = BENCHMARKS["numerics.training_explorer"][0]()
    sent = []
    ex.chart.observe(lambda ch: sent.append(ch["name"]), names=["spec", "_py_to_js_updates"])
    ex.controls["dtype"].value = "float8_e5m2"
    assert sent == ["spec"], sent   # the whole spec: Vega lays the new legend out
    ex = BENCHMARKS["compilation.bucketing_explorer"][0]()
    slider = next(c for c in ex.controls.values() if isinstance(c, W.IntSlider))
    sent = []
    ex.chart.observe(lambda ch: sent.append(ch["name"]), names=["spec", "_py_to_js_updates"])
    slider.value = slider.value + 1
    assert sent == ["_py_to_js_updates"], sent


def test_log_slider_bounds_read_as_a_learner_types_them():
    # issue 42: "tail (t dof) must be in [0.501187, 31.6228]"
    ex = _explorer("numerics.block_scaling_explorer")
    readout = ex.controls["df"].tl_readout
    readout.value = "40"
    assert "tail (t dof) must be in [0.5012, 31.62]; got 40" in ex.error.value, ex.error.value
    readout.value = "31.62"   # what the message allows is accepted
    assert "⚠" not in ex.error.value
    readout.value = "0.5012"
    assert "⚠" not in ex.error.value


@pytest.mark.parametrize("factory", ["topology.placement_explorer", "layouts.layout_explorer"])
def test_a_system_holding_other_rank_counts_gets_a_dp_that_fills_it(factory):
    """Issue 42: the Trn3 Gen2 menu options (576 ranks a system at LNC 2) failed with the default
    layout; DP now follows the system menu, the change is said, and a typed DP is never rewritten."""
    import importlib
    import math

    from trainium_lab import topology

    module, name = factory.split(".")
    ex = getattr(importlib.import_module(f"trainium_lab.widgets.{module}"), name)()
    ex.controls["system"].value = "trn3-gen2-ultraserver"
    assert ex.last_error is None
    per_system = topology.cluster("trn3-gen2-ultraserver", 1, ex.controls["lnc"].value).ranks_per_system
    product = math.prod(int(ex.controls[k].read()[0]) for k in ("tp", "pp", "dp", "ep") if k in ex.controls)
    assert product % per_system == 0
    ex.controls["dp"].value = "2"                    # typed: kept, and the error names the rule
    assert ex.controls["dp"].value == "2" and "whole number" in ex.last_error
