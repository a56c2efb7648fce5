"""Plain data types shared by every layer; no I/O here."""

from hawkwatch.model import collections
from hawkwatch.model.images import BinaryImage, ImageList
from hawkwatch.model.parsed import Parsed
from hawkwatch.model.record import Record, Skipped

__all__ = ["BinaryImage", "ImageList", "Parsed", "Record", "Skipped", "collections"]
