"""What the HTML report costs: render time against the JSON report of the same session, and size.

Run: python benchmarks/html_report.py [--pairs 9] [--session PATH_OR_NAME]

A large synthetic session (long series, a thousand stalls, GC pauses, spans and requests, a
profile of tens of thousands of call-tree nodes) is built once through the real report code;
then, alternately (BENCHMARKS.md), the JSON twin (``to_json_dict`` + ``json.dumps``, the peer:
what ``report --json`` does) and the standalone HTML (``to_json_dict`` +
``render_standalone_html``) are rendered from the same ``SessionReport``. Printed: the median of
the per-pair ratios HTML / JSON with min and max, the absolute medians, and the sizes (which show
the report's bounds at work: series ≤ 2,000 points, ≤ 500 marks, flame subtrees < 0.1 % left
out). ``--session`` measures a real session as well (e.g. the demo's).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time

from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.api.report import session_report
from hawkwatch.api.session import load_session
from hawkwatch.model import Record
from hawkwatch.model import collections as c
from hawkwatch.model.profile import CallNode, CallTree
from hawkwatch.model.records import Anr, NetworkTransaction, Phases
from hawkwatch.model.records.stall import AnrPoint, PointFrame
from hawkwatch.model.report import SessionReport
from hawkwatch.model.stack import PyFrame
from hawkwatch.report.json_report import to_json_dict
from hawkwatch.web.standalone import render_standalone_html

T0 = 1_700_000_000.0


def synthetic_report(seed: int = 7) -> tuple[SessionReport, int]:
    """A long, busy session; returns the report and the profile's node count."""
    rng = random.Random(seed)
    records = [Record(c.LAUNCH_TIME, f"{T0:.6f}", f"{T0:.6f}")]
    for i in range(20_000):
        t = T0 + i * 0.1
        records.append(Record(c.RESIDENT_FOOTPRINT, f"{t:.6f}", f"{100 + rng.random() * 50:.2f}"))
        records.append(Record(c.CPU, f"{t:.6f}", f"{rng.random() * 100:.1f}"))
    for i in range(1_000):
        start = T0 + i * 2.0
        frames = tuple(PointFrame(f"f{i % 40}_{d}", f"/app/m{d}.py", d + 1, 3) for d in range(12))
        anr = Anr(duration=100 + rng.random() * 900, start_from=start, in_background=False,
                  stacks=(), point=AnrPoint(0, frames, 0, 3), thread="MainThread")  # fmt: skip
        records.append(anr.to_record(f"{start:.6f}_0"))
    for i in range(1_000):
        request = NetworkTransaction(
            start=T0 + i * 1.9, index=i, method="GET", url=f"http://h{i % 7}/item/{i}",
            host=f"h{i % 7}", library="urllib", status=200,
            phases_ms=Phases(dns=1.0, tcp=2.0, ttfb=rng.random() * 200, receive=3.0, total=250.0),
        )  # fmt: skip
        records.append(request.to_record())
    tree, nodes = _tree(rng)
    report = build_session_report(records, {"app_name": "bench"}, name="bench", profile=tree)
    return report, nodes


def _tree(rng: random.Random) -> tuple[CallTree, int]:
    """A profile of some 14,000 nodes (depth ≤ 6, fan-out ≤ 6) with skewed counts."""
    made = 0

    def node(depth: int, count: int) -> CallNode:
        nonlocal made
        made += 1
        frame = PyFrame(f"fn_{depth}_{made}", f"/app/mod{depth}.py", made % 500)
        if depth == 6 or count < 2:
            return CallNode(frame, count)
        weights = [rng.random() ** 3 for _ in range(6)]
        total = sum(weights)
        shares = [int(count * w / total) for w in weights]
        return CallNode(frame, count, tuple(node(depth + 1, s) for s in shares if s > 0))

    root = node(0, 1_000_000)
    return CallTree((root,)), made


def measure(report: SessionReport, pairs: int) -> dict[str, float]:
    def as_json() -> str:
        return json.dumps(to_json_dict(report), indent=2)

    def as_html() -> str:
        return render_standalone_html(to_json_dict(report), "bench")

    as_json(), as_html()  # warm-up
    ratios, json_s, html_s = [], [], []
    for round_ in range(pairs):
        order = (as_json, as_html) if round_ % 2 == 0 else (as_html, as_json)
        took = {}
        for render in order:
            began = time.perf_counter()
            render()
            took[render] = time.perf_counter() - began
        json_s.append(took[as_json])
        html_s.append(took[as_html])
        ratios.append(took[as_html] / took[as_json])
    return {
        "ratio": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
        "json_ms": statistics.median(json_s) * 1000, "html_ms": statistics.median(html_s) * 1000,
        "json_bytes": len(as_json().encode()), "html_bytes": len(as_html().encode()),
    }  # fmt: skip


def show(name: str, figures: dict[str, float]) -> None:
    print(
        f"{name:<22} HTML/JSON render {figures['ratio']:.2f}x (min {figures['min']:.2f}, "
        f"max {figures['max']:.2f}); JSON {figures['json_ms']:.1f} ms, "
        f"HTML {figures['html_ms']:.1f} ms; JSON {figures['json_bytes'] / 1024:,.0f} KiB, "
        f"HTML {figures['html_bytes'] / 1024:,.0f} KiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--session", help="also measure this real session (folder or name)")
    args = parser.parse_args()
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, {args.pairs} alternated pairs")  # fmt: skip
    report, nodes = synthetic_report()
    assert report.flame is not None and report.timeline is not None
    print(f"synthetic: 20,000 samples x 2 series, 1,000 stalls, 1,000 requests, profile of "
          f"{nodes:,} nodes -> flame keeps {len(report.flame.nodes):,} nodes "
          f"({report.flame.pruned:,} subtrees left out)")  # fmt: skip
    show("synthetic session", measure(report, args.pairs))
    if args.session:
        show("real session", measure(session_report(load_session(args.session)), args.pairs))


if __name__ == "__main__":
    main()
