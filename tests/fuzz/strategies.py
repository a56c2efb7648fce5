"""Hypothesis strategies for hostile reader input: JSON with absurd values, damaged text."""

from __future__ import annotations

import json

from hypothesis import strategies as st

#: Numbers the adversarial run broke readers with, next to ordinary ones.
hostile_numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=10**300, max_value=10**4000),  # JSON accepts up to 4,300 digits
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**63, 2**64, 1e300, -1e300]),
)
hostile_strings = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["0x" + "f" * 40, "9" * 5000, "", "\x00", "NaN", "0x", "-0x1", "[", "{"]),
)
scalars = st.one_of(st.none(), st.booleans(), hostile_numbers, hostile_strings)

#: Any JSON value, a few levels deep, with the keys the crash and jetsam readers look up.
KEYS = [
    "report", "crash", "threads", "binary_images", "system", "error", "process_id", "pid",
    "frames", "imageIndex", "imageOffset", "usedImages", "base", "size", "memoryStatus",
    "pageSize", "processes", "rpages", "lifetimeMax", "name", "instruction_addr", "backtrace",
    "contents", "index", "crashed", "faultingThread", "exception", "signal", "mach",
    "largestProcess", "memoryPages", "recrash_report", "image_addr", "symbol_addr",
]  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=6),
    ),
    max_leaves=30,
)


def dumps(value: object) -> str:
    """JSON text for any value the strategies make (NaN and Infinity as Python writes them,
    integers past the 4,300-digit limit written out by hand)."""
    try:
        return json.dumps(value)
    except ValueError:  # an int too long for str(): write its digits without conversion limit
        return "9" * 5000


deep_json = st.integers(min_value=400, max_value=5000).map(lambda n: "[" * n + "]" * n)

ips_header = st.fixed_dictionaries(
    {"bug_type": st.sampled_from(["309", "109", "298", "288", 309, None])},
    optional={"timestamp": hostile_strings, "incident_id": hostile_strings},
)

#: Lines an Apple ``.crash`` text report is made of, with hostile fields.
crash_text_lines = st.one_of(
    st.builds(
        lambda n: f"Thread {n} Crashed:",
        st.text("0123456789", min_size=1, max_size=5000) | hostile_strings,
    ),
    st.builds(
        lambda i, a, o, line: f"{i}   libfoo.dylib   0x{a} bar + {o} (x.c:{line})",
        st.integers(0, 200),
        st.text("0123456789abcdef", min_size=1, max_size=5000),
        st.text("0123456789", min_size=1, max_size=5000),
        st.text("0123456789", min_size=1, max_size=5000),
    ),
    st.builds(
        lambda lo, hi: f"0x{lo} - 0x{hi} foo arm64 <0123456789abcdef0123456789abcdef> /x/foo",
        st.text("0123456789abcdef", min_size=1, max_size=5000),
        st.text("0123456789abcdef", min_size=1, max_size=5000),
    ),
    st.builds(lambda v: f"Process: foo [{v}]", st.text("0123456789", min_size=1, max_size=5000)),
    st.builds(lambda v: f"Triggered by Thread:  {v}", st.text("0123456789", max_size=5000)),
    st.sampled_from(["Binary Images:", "Thread 0:", "Incident Identifier: X", ""]),
    st.text(max_size=60),
)
