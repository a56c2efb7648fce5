"""pprof's ``profile.proto`` (github.com/google/pprof ``proto/profile.proto``) for the real
``protobuf`` package, declared field by field so tests need no ``protoc``."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
INT64, UINT64, STRING, BOOL, MESSAGE = (
    _F.TYPE_INT64,
    _F.TYPE_UINT64,
    _F.TYPE_STRING,
    _F.TYPE_BOOL,
    _F.TYPE_MESSAGE,
)
ONE, MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

MESSAGES = {
    "Profile": [
        ("sample_type", 1, MESSAGE, MANY, "ValueType"),
        ("sample", 2, MESSAGE, MANY, "Sample"),
        ("mapping", 3, MESSAGE, MANY, "Mapping"),
        ("location", 4, MESSAGE, MANY, "Location"),
        ("function", 5, MESSAGE, MANY, "Function"),
        ("string_table", 6, STRING, MANY, None),
        ("drop_frames", 7, INT64, ONE, None),
        ("keep_frames", 8, INT64, ONE, None),
        ("time_nanos", 9, INT64, ONE, None),
        ("duration_nanos", 10, INT64, ONE, None),
        ("period_type", 11, MESSAGE, ONE, "ValueType"),
        ("period", 12, INT64, ONE, None),
        ("comment", 13, INT64, MANY, None),
        ("default_sample_type", 14, INT64, ONE, None),
    ],
    "ValueType": [("type", 1, INT64, ONE, None), ("unit", 2, INT64, ONE, None)],
    "Sample": [
        ("location_id", 1, UINT64, MANY, None),
        ("value", 2, INT64, MANY, None),
        ("label", 3, MESSAGE, MANY, "Label"),
    ],
    "Label": [
        ("key", 1, INT64, ONE, None),
        ("str", 2, INT64, ONE, None),
        ("num", 3, INT64, ONE, None),
        ("num_unit", 4, INT64, ONE, None),
    ],
    "Mapping": [
        ("id", 1, UINT64, ONE, None),
        ("memory_start", 2, UINT64, ONE, None),
        ("memory_limit", 3, UINT64, ONE, None),
        ("file_offset", 4, UINT64, ONE, None),
        ("filename", 5, INT64, ONE, None),
        ("build_id", 6, INT64, ONE, None),
        ("has_functions", 7, BOOL, ONE, None),
        ("has_filenames", 8, BOOL, ONE, None),
        ("has_line_numbers", 9, BOOL, ONE, None),
        ("has_inline_frames", 10, BOOL, ONE, None),
    ],
    "Location": [
        ("id", 1, UINT64, ONE, None),
        ("mapping_id", 2, UINT64, ONE, None),
        ("address", 3, UINT64, ONE, None),
        ("line", 4, MESSAGE, MANY, "Line"),
        ("is_folded", 5, BOOL, ONE, None),
    ],
    "Line": [
        ("function_id", 1, UINT64, ONE, None),
        ("line", 2, INT64, ONE, None),
        ("column", 3, INT64, ONE, None),
    ],
    "Function": [
        ("id", 1, UINT64, ONE, None),
        ("name", 2, INT64, ONE, None),
        ("system_name", 3, INT64, ONE, None),
        ("filename", 4, INT64, ONE, None),
        ("start_line", 5, INT64, ONE, None),
    ],
}


def profile_message_class() -> Any:
    """The generated ``perftools.profiles.Profile`` class."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="hawkwatch_test_profile.proto", package="perftools.profiles", syntax="proto3"
    )
    for name, fields in MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field_name, number, kind, label, type_name in fields:
            field = message.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                field.type_name = f".perftools.profiles.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("perftools.profiles.Profile"))
