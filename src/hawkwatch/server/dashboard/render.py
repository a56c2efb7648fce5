"""Templates (Jinja2, autoescaped), their filters, the security headers every page carries, and
the files under ``/static`` and ``/favicon.ico`` — all from this package, nothing from outside."""

from __future__ import annotations

import struct
import time
import zlib
from functools import cache
from pathlib import Path
from typing import Any, Final

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.responses import HTMLResponse

from hawkwatch.server.dashboard import charts

HERE: Final = Path(__file__).parent
# Pages load only their own server's scripts and styles; no frames, no plug-ins.
PAGE_HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def when(value: float | None) -> str:
    if value is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(value))


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def millis(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} ms"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=when, percent=percent, seconds=seconds, millis=millis)
    env.globals.update(sparkline=charts.sparkline, bars=charts.bars)
    return env


def page(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    body = environment().get_template(template).render(**context)
    return HTMLResponse(body, status_code=status_code, headers=PAGE_HEADERS)


def _png_square(size: int, rgb: tuple[int, int, int]) -> bytes:
    """A ``size``×``size`` PNG: a filled rounded-ish square (the hawkwatch mark)."""
    rows = []
    for y in range(size):
        row = bytearray([0])  # filter: none
        for x in range(size):
            corner = min(x, size - 1 - x) + min(y, size - 1 - y) < 2
            row += bytes((*rgb, 0 if corner else 255))
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF
        )

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))  # fmt: skip


@cache
def favicon() -> bytes:
    """``/favicon.ico``: an ICO holding one 32×32 PNG (written here, no binary checked in)."""
    png = _png_square(32, (0x1F, 0x5F, 0x8F))
    directory = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", 32, 32, 0, 0, 1, 32, len(png), 6 + 16)
    return directory + entry + png


CONTENT_TYPES: Final = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
}


@cache
def static_files() -> dict[str, bytes]:
    """The dashboard's own files and the session view's (``hawkwatch.web``, when installed)."""
    files = {path.name: path.read_bytes() for path in (HERE / "static").iterdir() if path.is_file()}
    try:
        from hawkwatch.web.assets import asset_files  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return files
    return {**asset_files(), **files}
