"""Names come back readable: C++ as llvm-cxxfilt prints them, Swift, and others untouched."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from hawkwatch.symbols.demangle import demangle_name

CPP = [
    "_ZN4hawk10crash_hereEPii",
    "__ZN4hawk10crash_hereEPii",  # Mach-O symbol tables add a leading underscore
    "_ZNSt3__16vectorIiNS_9allocatorIiEEE9push_backEOi",
    "_ZZN1A1fEvE1x",
    "_ZN3foo3barIJidEEEvDpT_",
]


@pytest.mark.parametrize("name", CPP)
def test_cpp_names_read_as_llvm_cxxfilt_reads_them(name):
    tool = shutil.which("llvm-cxxfilt")
    if tool is None:
        if not sys.platform.startswith("linux"):
            pytest.skip("llvm-cxxfilt not installed")
        raise RuntimeError("llvm-cxxfilt missing: scripts/test.sh installs the Debian package llvm")
    flags = ["-_"] if name.startswith("__Z") else []
    expected = subprocess.run(
        [tool, *flags, name], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert expected != name
    # LLVM 14 still writes "> >" where newer demanglers close templates as ">>"
    assert demangle_name(name) == expected.replace("> >", ">>")


@pytest.mark.parametrize(
    ("mangled", "readable"),
    [
        ("$s4main3fooyyF", "main.foo() -> ()"),
        ("_$s4main3fooyyF", "main.foo() -> ()"),
        (
            "_TToFC11CrashLibiOS13CRLCrashSwift5crashfT_T_",
            "@objc CrashLibiOS.CRLCrashSwift.crash() -> ()",
        ),
    ],
)
def test_swift_names(mangled, readable):
    assert demangle_name(mangled) == readable


@pytest.mark.parametrize(
    "name",
    ["main", "crash_here", "-[PlanetViewController viewDidLoad]", "_OBJC_CLASS_$_NSData", "_main"],
)
def test_c_and_objective_c_names_are_left_alone(name):
    assert demangle_name(name) == name
