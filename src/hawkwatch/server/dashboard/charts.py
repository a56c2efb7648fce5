"""Small inline SVG charts drawn on the server: no script, nothing fetched, readable without JS.

Each function returns SVG markup built only from numbers and from labels escaped here, so the
templates can insert it as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape


def sparkline(values: Sequence[int], *, width: int = 112, height: int = 24) -> Markup:
    """A polyline of ``values`` (one per day, oldest first), scaled to the largest."""
    if not values:
        return Markup("")
    top = max(values) or 1
    step = width / max(1, len(values) - 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v / top) * (height - 4):.1f}" for i, v in enumerate(values)
    )
    label = escape(f"{sum(values)} in the last {len(values)} days")
    return Markup(
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{label}"><title>{label}</title>'
        f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{points}"/></svg>'
    )


def bars(
    items: Sequence[tuple[str, float]], *, width: int = 640, height: int = 120,
    label_every: int = 1,
) -> Markup:  # fmt: skip
    """A bar chart of ``(label, value)`` pairs; each bar's title gives its label and value."""
    if not items:
        return Markup('<p class="muted">none</p>')
    top = max(value for _, value in items) or 1
    slot = width / len(items)
    bar_w = min(48.0, max(1.0, slot * 0.8))
    chart = height - 18
    parts = [
        f'<svg class="bars" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img">'
    ]
    for i, (label, value) in enumerate(items):
        h = (value / top) * (chart - 2)
        x = i * slot + (slot - bar_w) / 2
        tip = escape(f"{label}: {value:g}")
        parts.append(
            f'<rect x="{x:.1f}" y="{chart - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}">'
            f"<title>{tip}</title></rect>"
        )
        if i % label_every == 0:
            parts.append(
                f'<text x="{i * slot + slot / 2:.1f}" y="{height - 4}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))
