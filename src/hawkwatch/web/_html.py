"""Small HTML building blocks: every text goes through ``esc`` (quotes included)."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any


def esc(value: object) -> str:
    """``value`` as HTML text or attribute value (``<``, ``>``, ``&``, both quotes escaped)."""
    return html.escape("" if value is None else str(value), quote=True)


def attrs(values: Mapping[str, object]) -> str:
    """`` name="value"`` pairs (None values left out), escaped."""
    return "".join(f' {name}="{esc(value)}"' for name, value in values.items() if value is not None)


def tag(name: str, body: str = "", **attributes: object) -> str:
    """``<name …>body</name>``; ``body`` is HTML already; ``class_`` → ``class``, ``_`` → ``-``."""
    return f"<{name}{attrs(_names(attributes))}>{body}</{name}>"


def _names(attributes: Mapping[str, object]) -> dict[str, object]:
    """Python keyword names as attribute names: ``class_`` → ``class``, ``_`` → ``-``."""
    return {key.rstrip("_").replace("_", "-"): value for key, value in attributes.items()}


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], **attributes: object) -> str:
    """A table; ``headers`` are text, cells are HTML already."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return tag("table", f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>", **attributes)


def json_script(data: Any, **attributes: object) -> str:
    """``data`` as ``<script type="application/json">``: ``<``, ``>``, ``&`` and the JS line
    separators are ``\\u`` escapes, so no text in it can close the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(char, escape)
    return f'<script type="application/json"{attrs(_names(attributes))}>{text}</script>'


def ms(value: float | None) -> str:
    """Milliseconds for people: ``850 ms``, ``1.25 s``; ``–`` when unknown."""
    if value is None or not math.isfinite(value):
        return "–"
    if abs(value) >= 1000:
        return f"{value / 1000:,.2f} s"
    return f"{value:,.1f} ms" if abs(value) < 100 else f"{value:,.0f} ms"


def num(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:,.{digits}f}"


def size(value: float | None) -> str:
    """Bytes for people (binary units)."""
    if value is None or not math.isfinite(value):
        return "–"
    amount = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(amount) < 1024 or unit == "GiB":
            return f"{amount:,.0f} {unit}" if unit == "B" else f"{amount:,.1f} {unit}"
        amount /= 1024
    return f"{amount:,.1f} GiB"


def offset(value: float | None) -> str:
    """Seconds since the session start: ``+1.234 s``."""
    return "–" if value is None else f"+{value:,.3f} s"


def count(n: int, noun: str) -> str:
    """``1 window``, ``3 windows`` (``noun`` takes an ``s``)."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
