"""An interactive SVG flame graph, drawn by hawkwatch: no CDN, no external script.

Outermost frames at the bottom; each frame is a ``<g class="frame">`` holding a ``<title>``
(hover: frame, samples, share), a ``<rect>`` and a ``<text>`` label cut to fit. Inline JS zooms
on click: the clicked frame spans the full width, its descendants scale with it, its ancestors
stay full width, everything else hides; clicking the ``Reset zoom`` label or the background
restores the view. Frames narrower than ``MIN_WIDTH_PX`` are left out to keep files small.
Each ``g`` carries ``data-start``, ``data-count`` and ``data-depth`` in sample units, which the
script (and tests) use.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Final, TextIO
from xml.sax.saxutils import escape, quoteattr

from hawkwatch.model.profile import CallNode, CallTree, Frame, frame_label, is_thread_frame

output_file_extension: Final = "svg"
output_is_binary: Final = False

WIDTH_PX: Final = 1200
ROW_PX: Final = 17
MARGIN_PX: Final = 10
HEADER_PX: Final = 44
MIN_WIDTH_PX: Final = 0.3
CHAR_PX: Final = 7.0
FONT: Final = "Verdana, DejaVu Sans, sans-serif"


@dataclass(frozen=True, slots=True)
class FlameBox:
    """One frame's box: ``start`` and ``count`` in samples, ``depth`` 0 = outermost."""

    label: str
    start: int
    count: int
    depth: int
    color: str
    is_thread: bool


def layout(tree: CallTree, min_fraction: float) -> list[FlameBox]:
    boxes: list[FlameBox] = []
    total = tree.total
    minimum = total * min_fraction
    pending: list[tuple[CallNode, int, int]] = []
    offset = 0
    for root in tree.roots:
        pending.append((root, offset, 0))
        offset += root.count
    while pending:
        node, start, depth = pending.pop()
        if node.count < minimum or node.count == 0:
            continue
        boxes.append(_box(node.frame, start, node.count, depth))
        child_start = start
        for child in node.children:
            pending.append((child, child_start, depth + 1))
            child_start += child.count
    boxes.sort(key=lambda box: (box.depth, box.start))
    return boxes


def _box(frame: Frame, start: int, count: int, depth: int) -> FlameBox:
    label = frame_label(frame)
    is_thread = is_thread_frame(frame)
    if is_thread:
        color = "rgb(150,170,200)"
    else:
        key = frame if isinstance(frame, int) else hash_key(frame.func, frame.file)
        red = 205 + key % 50
        green = (key >> 8) % 180
        blue = (key >> 16) % 55
        color = f"rgb({red},{green},{blue})"
    return FlameBox(label, start, count, depth, color, is_thread)


def hash_key(func: str, file: str) -> int:
    return zlib.crc32(f"{func}\0{file}".encode())


def render(tree: CallTree, file: TextIO, *, title: str | None = None) -> None:
    total = tree.total
    usable = WIDTH_PX - 2 * MARGIN_PX
    boxes = layout(tree, MIN_WIDTH_PX / usable)
    depth = max((box.depth for box in boxes), default=0) + 1
    height = HEADER_PX + depth * ROW_PX + MARGIN_PX
    heading = title or f"{tree.name} — {tree.mode} samples"
    write = file.write
    write('<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n')
    write(
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{WIDTH_PX}" '
        f'height="{height}" viewBox="0 0 {WIDTH_PX} {height}" '
        f'data-total="{total}" data-width="{usable}" data-margin="{MARGIN_PX}" '
        f'font-family={quoteattr(FONT)} font-size="12">\n'
    )
    write(f"<style>{_STYLE}</style>\n")
    write(
        f'<rect id="background" x="0" y="0" width="{WIDTH_PX}" height="{height}" fill="#f8f8f4"/>\n'
    )
    write(
        f'<text x="{WIDTH_PX / 2}" y="18" text-anchor="middle" font-size="15">'
        f"{escape(heading)}</text>\n"
    )
    write(f'<text id="reset" x="{MARGIN_PX}" y="18" class="hidden">Reset zoom</text>\n')
    write(f'<text id="details" x="{MARGIN_PX}" y="{HEADER_PX - 8}"> </text>\n')
    if not boxes:
        write(f'<text x="{MARGIN_PX}" y="{HEADER_PX + 14}">no samples</text>\n')
    write('<g id="frames">\n')
    bottom = height - MARGIN_PX
    for box in boxes:
        x = MARGIN_PX + box.start / total * usable
        width = box.count / total * usable
        y = bottom - (box.depth + 1) * ROW_PX
        share = box.count / total * 100
        tip = f"{box.label} ({box.count:,} sample{'s' if box.count != 1 else ''}, {share:.2f}%)"
        write(
            f'<g class="frame" data-start="{box.start}" data-count="{box.count}" '
            f'data-depth="{box.depth}" data-label={quoteattr(box.label)}>'
            f"<title>{escape(tip)}</title>"
            f'<rect x="{x:.2f}" y="{y}" width="{width:.2f}" height="{ROW_PX - 1}" '
            f'fill="{box.color}" rx="2"/>'
            f'<text x="{x + 3:.2f}" y="{y + ROW_PX - 5}">{escape(_fit(box.label, width))}</text>'
            "</g>\n"
        )
    write("</g>\n")
    write(f"<script><![CDATA[{_SCRIPT}]]></script>\n")
    write("</svg>\n")


def _fit(label: str, width: float) -> str:
    room = int((width - 6) / CHAR_PX)
    if room < 3:
        return ""
    return label if len(label) <= room else label[: room - 2] + ".."


_STYLE: Final = (
    ".frame text{pointer-events:none;fill:#000}.frame:hover rect{stroke:#000;stroke-width:0.6}"
    ".frame{cursor:pointer}.hidden{display:none}#reset{cursor:pointer;fill:#1a57b0}"
)

_SCRIPT: Final = r"""
(function () {
  var svg = document.documentElement;
  var total = +svg.getAttribute("data-total"), width = +svg.getAttribute("data-width");
  var margin = +svg.getAttribute("data-margin"), charPx = 7;
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.frame"));
  var reset = document.getElementById("reset"), details = document.getElementById("details");
  function fit(label, w) {
    var room = Math.floor((w - 6) / charPx);
    if (room < 3) return "";
    return label.length <= room ? label : label.slice(0, room - 2) + "..";
  }
  function place(g, x, w) {
    var rect = g.querySelector("rect"), text = g.querySelector("text");
    rect.setAttribute("x", x.toFixed(2));
    rect.setAttribute("width", w.toFixed(2));
    text.setAttribute("x", (x + 3).toFixed(2));
    text.textContent = fit(g.getAttribute("data-label"), w);
    g.classList.remove("hidden");
  }
  function zoom(target) {
    var s = +target.getAttribute("data-start"), n = +target.getAttribute("data-count");
    var d = +target.getAttribute("data-depth");
    frames.forEach(function (g) {
      var gs = +g.getAttribute("data-start"), gn = +g.getAttribute("data-count");
      var gd = +g.getAttribute("data-depth");
      if (gd < d && gs <= s && gs + gn >= s + n) {
        place(g, margin, width);
      } else if (gd >= d && gs >= s && gs + gn <= s + n) {
        place(g, margin + (gs - s) / n * width, gn / n * width);
      } else {
        g.classList.add("hidden");
      }
    });
    reset.classList.remove("hidden");
    svg.setAttribute("data-zoomed", target.getAttribute("data-label"));
  }
  function unzoom() {
    frames.forEach(function (g) {
      place(g, margin + g.getAttribute("data-start") / total * width,
            g.getAttribute("data-count") / total * width);
    });
    reset.classList.add("hidden");
    svg.removeAttribute("data-zoomed");
  }
  frames.forEach(function (g) {
    g.addEventListener("click", function (event) { event.stopPropagation(); zoom(g); });
    g.addEventListener("mouseover", function () {
      details.textContent = g.querySelector("title").textContent;
    });
  });
  reset.addEventListener("click", unzoom);
  document.getElementById("background").addEventListener("click", unzoom);
})();
"""
