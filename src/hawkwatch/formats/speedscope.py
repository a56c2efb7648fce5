"""speedscope's file format (https://www.speedscope.app/file-format-schema.json), one
``sampled`` profile per call tree.

Layout: ``{"$schema", "shared": {"frames": [{name, file?, line?}]}, "profiles": [{"type":
"sampled", name, unit, startValue, endValue, samples: [[frame index, … outermost first]],
weights}], name, activeProfileIndex, exporter}``. Weights are seconds (count × the tree's
sample interval) when the interval is known, else plain sample counts (unit ``none``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, TextIO

from hawkwatch.model.profile import CallTree, Frame, frame_label, is_thread_frame, walk_paths

SCHEMA_URL: Final = "https://www.speedscope.app/file-format-schema.json"
output_file_extension: Final = "speedscope.json"
output_is_binary: Final = False


@dataclass(frozen=True, slots=True)
class SpeedscopeFrame:
    name: str
    file: str | None = None
    line: int | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.file:
            out["file"] = self.file
        if self.line:
            out["line"] = self.line
        return out


def _frame(frame: Frame) -> SpeedscopeFrame:
    if isinstance(frame, int) or is_thread_frame(frame):
        return SpeedscopeFrame(frame_label(frame))
    return SpeedscopeFrame(frame.func, frame.file or None, frame.line or None)


def to_json_dict(tree: CallTree) -> dict[str, Any]:
    frames: list[SpeedscopeFrame] = []
    index: dict[Frame, int] = {}
    samples: list[list[int]] = []
    weights: list[float] = []
    interval = tree.interval_s
    for path, count in walk_paths(tree):
        stack: list[int] = []
        for frame in path:
            found = index.get(frame)
            if found is None:
                found = index[frame] = len(frames)
                frames.append(_frame(frame))
            stack.append(found)
        samples.append(stack)
        weights.append(round(count * interval, 9) if interval > 0 else count)
    total = sum(weights)
    return {
        "$schema": SCHEMA_URL,
        "shared": {"frames": [frame.as_json() for frame in frames]},
        "profiles": [
            {
                "type": "sampled",
                "name": f"{tree.name} ({tree.mode}{', ' + tree.sampler if tree.sampler else ''})",
                "unit": "seconds" if interval > 0 else "none",
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }
        ],
        "name": tree.name,
        "activeProfileIndex": 0,
        "exporter": "hawkwatch",
    }


def render(tree: CallTree, file: TextIO) -> None:
    json.dump(to_json_dict(tree), file, separators=(",", ":"), ensure_ascii=False)
    file.write("\n")
