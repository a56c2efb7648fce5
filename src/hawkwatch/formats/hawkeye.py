"""MTHawkeye session side files: ``dyld-images`` and the network transaction logs.

Spec: ``formats/hawkeye.md`` §5.1 and §5.2 (MTHawkeye 0.12.8). The ``records`` file and the
AppenderFile layout are owned by ``hawkwatch.store``, which writes them too.

* ``dyld-images``: pretty-printed JSON ``{os_version, arch, model (the OS build), name,
  dyld_images: [{uuid, base_addr "0x…", addr_slide "0x…", name}]}``.
* ``network-transactions``: an AppenderFile whose first line is a leftover ``key,value`` header,
  then one JSON object per transaction. Transactions of 16 KiB or more live in the plain file
  ``hugeNetworkRecords``, each JSON object followed by the literal ``hawkeyeNetwork``.
  Readers keep the first record of each ``index`` and list the newest first, as MTHawkeye does.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Final

from hawkwatch.errors import FormatError, StoreError
from hawkwatch.model import BinaryImage, ImageList, Parsed, Skipped
from hawkwatch.store.appender_read import read_appender
from hawkwatch.store.files import read_side_file

DYLD_IMAGES_NAME: Final = "dyld-images"
NETWORK_TRANSACTIONS_NAME: Final = "network-transactions"
HUGE_NETWORK_RECORDS_NAME: Final = "hugeNetworkRecords"
HUGE_RECORD_DELIMITER: Final = b"hawkeyeNetwork"
NETWORK_HEADER: Final = b"key,value"


def parse_dyld_images(data: bytes, *, source: str = "<bytes>") -> Parsed[ImageList]:
    """Parse a ``dyld-images`` file; images that lack a usable address are skipped."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormatError(source, f"not JSON ({exc})") from exc
    except RecursionError:
        raise FormatError(source, "nested too deeply to be a dyld-images file") from None
    if not isinstance(document, dict):
        raise FormatError(source, "not a dyld-images object")
    images: list[BinaryImage] = []
    skipped: list[Skipped] = []
    entries = document.get("dyld_images")
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        image = _image(entry)
        if image is None:
            skipped.append(Skipped(index, "image without a name or a hex base address"))
        else:
            images.append(image)
    return Parsed(
        ImageList(
            images=images,
            os_version=_text(document.get("os_version")),
            arch=_text(document.get("arch")),
            os_build=_text(document.get("model")),
            app_name=_text(document.get("name")),
        ),
        skipped,
    )


def read_dyld_images(folder: str | os.PathLike[str]) -> Parsed[ImageList] | None:
    """The session's ``dyld-images``, or None when the folder has none."""
    path = Path(folder) / DYLD_IMAGES_NAME
    if not path.exists():
        return None
    try:
        data = read_side_file(path)
    except StoreError as exc:
        raise FormatError(str(path), str(exc).removeprefix(f"{path}: ")) from exc
    return parse_dyld_images(data, source=str(path))


def parse_network_transactions(
    lines: list[bytes], huge: bytes = b""
) -> Parsed[list[dict[str, Any]]]:
    """Transactions from the appender's lines and ``hugeNetworkRecords``, newest first."""
    transactions: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    for number, line in enumerate(lines, start=1):
        if line == NETWORK_HEADER:
            continue
        _add_transaction(line, number, transactions, skipped)
    for number, chunk in enumerate(huge.split(HUGE_RECORD_DELIMITER), start=1):
        if chunk.strip():
            _add_transaction(chunk, number, transactions, skipped, where="hugeNetworkRecords ")
    return Parsed(_dedupe_newest_first(transactions), skipped)


def read_network_transactions(folder: str | os.PathLike[str]) -> Parsed[list[dict[str, Any]]]:
    """A session's network transactions; an empty list when it recorded none."""
    folder = Path(folder)
    content = read_appender(folder, NETWORK_TRANSACTIONS_NAME)
    skipped = list(content.skipped)
    try:
        huge = read_side_file(folder / HUGE_NETWORK_RECORDS_NAME)
    except StoreError as exc:
        huge = b""
        skipped.append(Skipped(0, str(exc)))
    parsed = parse_network_transactions(content.lines, huge)
    return Parsed(parsed.value, skipped + parsed.skipped)


def _add_transaction(
    raw: bytes,
    number: int,
    into: list[dict[str, Any]],
    skipped: list[Skipped],
    where: str = "",
) -> None:
    try:
        item = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        skipped.append(Skipped(number, f"{where}record is not JSON (truncated by the writer?)"))
        return
    if isinstance(item, dict):
        into.append(item)
    else:
        skipped.append(Skipped(number, f"{where}record is not a JSON object"))


def _dedupe_newest_first(transactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[object] = set()
    unique: list[dict[str, Any]] = []
    for item in transactions:
        index = item.get("index")
        if index is not None:
            key = index if isinstance(index, str | int | float) else repr(index)  # hashable
            if key in seen:
                continue
            seen.add(key)
        unique.append(item)
    unique.sort(key=_index_of, reverse=True)
    return unique


def _index_of(item: dict[str, Any]) -> float:
    index = item.get("index")
    try:
        number = float(index)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return -1.0
    return number if math.isfinite(number) else -1.0


def _image(entry: object) -> BinaryImage | None:
    if not isinstance(entry, dict):
        return None
    name = _text(entry.get("name"))
    base = _hex(entry.get("base_addr", entry.get("addr")))  # servers also see "addr"
    if name is None or base is None:
        return None
    uuid = (_text(entry.get("uuid")) or "").replace("-", "").lower()
    return BinaryImage(
        name=name, debug_id=uuid, base_address=base, slide=_hex(entry.get("addr_slide")) or 0
    )


def _hex(value: object) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
