"""Every export opens in its reference reader: collapsed text, speedscope (schema and its own
viewer in a browser), pprof (decoded with the real protobuf package), the SVG flame graph (in
chromium, with a click that zooms)."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

from hawkwatch.formats import collapsed, flamegraph_svg, pprof, speedscope
from hawkwatch.model.profile import CallNode, CallTree, thread_frame
from hawkwatch.model.stack import PyFrame
from hawkwatch.report.outputs import OUTPUTS, render
from tests.browser import dump_dom, serve, speedscope_release
from tests.formats.pprof_proto import profile_message_class

MAIN = PyFrame("<module>", "/app/main.py", 3)
RUN = PyFrame("run", "/app/work.py", 8)
F = PyFrame("f", "/app/work.py", 12)
G = PyFrame("g", "/app/work.py", 30)
HEAD = thread_frame("MainThread")


def sample_tree() -> CallTree:
    """60 samples in f, 40 in g, 5 in run itself, 5 in a native address: 110 in all."""
    run = CallNode(RUN, 105, (CallNode(F, 60), CallNode(G, 40)))
    return CallTree(
        (CallNode(HEAD, 110, (CallNode(MAIN, 110, (run, CallNode(0x1A2B, 5))),)),),
        name="unit",
        mode="cpu",
        interval_s=0.01,
        start_time=1_700_000_000.0,
        duration_s=1.1,
    )


def render_text(module, tree: CallTree) -> str:
    out = io.StringIO()
    module.render(tree, out)
    return out.getvalue()


def test_collapsed_is_one_line_per_stack_outermost_first() -> None:
    assert render_text(collapsed, sample_tree()) == (
        "thread MainThread;<module> (/app/main.py:3);run (/app/work.py:8) 5\n"
        "thread MainThread;<module> (/app/main.py:3);run (/app/work.py:8);f (/app/work.py:12) 60\n"
        "thread MainThread;<module> (/app/main.py:3);run (/app/work.py:8);g (/app/work.py:30) 40\n"
        "thread MainThread;<module> (/app/main.py:3);0x1a2b 5\n"
    )
    parsed = collapsed.parse(render_text(collapsed, sample_tree()))
    assert sum(count for _, count in parsed) == 110


def test_collapsed_keeps_semicolons_out_of_frames() -> None:
    tree = CallTree((CallNode(PyFrame("a;b", "/x;y.py", 1), 2),))
    assert render_text(collapsed, tree) == "a:b (/x:y.py:1) 2\n"


def speedscope_schema() -> dict:
    return json.loads((speedscope_release() / "file-format-schema.json").read_text())


def test_speedscope_output_validates_against_speedscopes_own_schema() -> None:
    document = json.loads(render_text(speedscope, sample_tree()))
    jsonschema.validate(document, speedscope_schema())
    profile = document["profiles"][0]
    assert profile["unit"] == "seconds"
    assert sum(profile["weights"]) == pytest.approx(1.1)
    names = [f["name"] for f in document["shared"]["frames"]]
    leaf_weights = {
        names[s[-1]]: w for s, w in zip(profile["samples"], profile["weights"], strict=True)
    }
    assert leaf_weights["f"] == pytest.approx(0.6) and leaf_weights["g"] == pytest.approx(0.4)


def test_a_broken_speedscope_document_fails_the_schema() -> None:
    document = json.loads(render_text(speedscope, sample_tree()))
    document["profiles"][0]["type"] = "flat"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, speedscope_schema())


@pytest.mark.parametrize(
    ("module", "name", "title"),
    [(speedscope, "profile.json", "unit (cpu)"), (collapsed, "unit.txt", "unit.txt")],
    ids=["speedscope", "collapsed"],
)
def test_speedscopes_viewer_opens_the_file(tmp_path: Path, module, name: str, title: str) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / name).write_text(render_text(module, sample_tree()))
    with serve(site, speedscope_release()) as base:
        url = f"{base}/index.html#profileURL={base}/{name}"
        dom = dump_dom(url, tmp_path / "chromium")
    assert "Something went wrong" not in dom
    assert title in dom  # the profile's name in speedscope's toolbar: it was imported


def test_pprof_decodes_with_the_protobuf_package() -> None:
    out = io.BytesIO()
    pprof.render(sample_tree(), out)
    message = profile_message_class().FromString(gzip.decompress(out.getvalue()))
    strings = list(message.string_table)
    assert strings[0] == ""
    assert [(strings[t.type], strings[t.unit]) for t in message.sample_type] == [
        ("samples", "count"),
        ("cpu", "nanoseconds"),
    ]
    assert message.period == 10_000_000 and strings[message.period_type.type] == "cpu"
    functions = {f.id: f for f in message.function}
    locations = {loc.id: loc for loc in message.location}

    def names(sample) -> list[str]:  # leaf first, as pprof stores them
        return [
            strings[functions[locations[i].line[0].function_id].name] for i in sample.location_id
        ]

    by_leaf = {names(s)[0]: (names(s), list(s.value)) for s in message.sample}
    assert by_leaf["f"] == (["f", "run", "<module>", "thread MainThread"], [60, 600_000_000])
    assert by_leaf["g"][1] == [40, 400_000_000]
    assert sum(s.value[0] for s in message.sample) == 110
    address = next(loc for loc in message.location if loc.address)
    assert address.address == 0x1A2B
    f_location = locations[message.sample[1].location_id[0]]
    assert strings[functions[f_location.line[0].function_id].filename] == "/app/work.py"
    assert message.duration_nanos == 1_100_000_000


def test_pprof_without_an_interval_has_only_sample_counts() -> None:
    tree = CallTree((CallNode(F, 3),), mode="cpu")
    out = io.BytesIO()
    pprof.render(tree, out)
    message = profile_message_class().FromString(gzip.decompress(out.getvalue()))
    assert len(message.sample_type) == 1 and list(message.sample[0].value) == [3]
    again = io.BytesIO()
    pprof.render(tree, again)
    assert out.getvalue() == again.getvalue()  # no timestamp in the gzip header


def test_the_svg_flame_graph_has_one_box_per_frame_with_hover_titles() -> None:
    svg = render_text(flamegraph_svg, sample_tree())
    boxes = re.findall(
        r'<g class="frame" data-start="(\d+)" data-count="(\d+)" data-depth="(\d+)"', svg
    )
    assert len(boxes) == 6
    assert ("0", "110", "0") in boxes
    assert "<title>f (/app/work.py:12) (60 samples, 54.55%)</title>" in svg
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # no CDN, nothing fetched


def test_the_svg_flame_graph_renders_and_zooms_in_chromium(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "flame.svg").write_text(render_text(flamegraph_svg, sample_tree()))
    (site / "page.html").write_text(ZOOM_PAGE)
    with serve(site) as base:
        dom = dump_dom(f"{base}/page.html", tmp_path / "chromium")
    match = re.search(r'<pre id="result">(.*?)</pre>', dom, re.DOTALL)
    assert match, dom[-2000:]
    result = json.loads(match.group(1))
    assert result["frames"] == 6
    assert result["drawn"] > 100  # the browser laid the frame out: f is 60/110 of 1180 px
    assert result["before"] == pytest.approx(1180 * 60 / 110, abs=0.05)
    assert result["after"] == pytest.approx(1180, abs=0.05)  # clicked: f spans the width
    assert result["zoomed"] == "f (/app/work.py:12)"
    assert result["g_hidden"] is True  # the sibling is hidden while zoomed
    assert result["reset"] == pytest.approx(result["before"], abs=0.05)


ZOOM_PAGE = """<!doctype html><html><body>
<object id="flame" type="image/svg+xml" data="flame.svg" width="1200" height="200"></object>
<pre id="result">pending</pre>
<script>
document.getElementById("flame").addEventListener("load", function () {
  var doc = document.getElementById("flame").contentDocument;
  var frames = doc.querySelectorAll("g.frame");
  function find(prefix) {
    var found = null;
    frames.forEach(function (g) {
      if (g.getAttribute("data-label").indexOf(prefix) === 0) found = g;
    });
    return found;
  }
  var f = find("f ("), g = find("g ("), rect = f.querySelector("rect");
  var before = +rect.getAttribute("width"), drawn = rect.getBBox().width;
  f.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  var after = +rect.getAttribute("width");
  var zoomed = doc.documentElement.getAttribute("data-zoomed");
  var gHidden = g.classList.contains("hidden");
  doc.getElementById("reset").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  document.getElementById("result").textContent = JSON.stringify({
    frames: frames.length, before: before, after: after, drawn: drawn, zoomed: zoomed,
    g_hidden: gHidden, reset: +rect.getAttribute("width")});
});
</script></body></html>
"""


def test_every_registered_exporter_renders_an_empty_tree_as_an_empty_profile() -> None:
    rendered = {}
    for name, output in OUTPUTS["CallTree"].items():
        out = io.BytesIO() if output.is_binary else io.StringIO()
        render(CallTree(()), name, out)
        rendered[name] = out.getvalue()
    assert set(rendered) >= {"collapsed", "speedscope", "pprof", "svg", "json"}
    assert rendered["collapsed"] == ""
    document = json.loads(rendered["speedscope"])
    assert document["shared"]["frames"] == []
    assert [(p["samples"], p["weights"]) for p in document["profiles"]] == [([], [])]
    assert json.loads(rendered["json"])["roots"] == []
    assert json.loads(rendered["json"])["total"] == 0
    message = profile_message_class().FromString(gzip.decompress(rendered["pprof"]))
    assert (len(message.sample), len(message.location)) == (0, 0)
    assert 'data-total="0"' in rendered["svg"]
    assert rendered["svg"].count('<g class="frame"') == 0


# -- properties over arbitrary trees ---------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hawkwatch.model.profile import walk_paths  # noqa: E402
from tests.model.test_profile import nodes  # noqa: E402


def self_total(tree: CallTree) -> int:
    return sum(count for _, count in walk_paths(tree))


@settings(max_examples=50, deadline=None)
@given(st.lists(nodes(), max_size=4).map(tuple), st.floats(0, 0.1))
def test_every_exporter_keeps_every_sample(roots, interval) -> None:
    tree = CallTree(roots, interval_s=interval)
    parsed = collapsed.parse(render_text(collapsed, tree))
    assert sum(count for _, count in parsed) == self_total(tree)
    document = json.loads(render_text(speedscope, tree))
    assert len(document["profiles"][0]["samples"]) == len(parsed)
    out = io.BytesIO()
    pprof.render(tree, out)
    message = profile_message_class().FromString(gzip.decompress(out.getvalue()))
    assert sum(sample.value[0] for sample in message.sample) == self_total(tree)
    svg = render_text(flamegraph_svg, tree)
    assert svg.count('<g class="frame"') <= sum(1 for _ in _all_nodes(roots))


def _all_nodes(roots):
    pending = list(roots)
    while pending:
        node = pending.pop()
        yield node
        pending.extend(node.children)
