#!/usr/bin/env bash
# Set up and run every check: ruff and mypy once, then the test suite on CPython 3.11, 3.12 and
# 3.13 (the agent's frames and threading differ between them). Each Python gets its own venv in
# .venvs/. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages the tests need (installed only when missing; CI runs as root) ---
# llvm: dsymutil (links the DWARF of the arm64 Mach-O test binaries into dSYMs),
# llvm-symbolizer (the independent oracle symbolication is checked against), llvm-nm
need_apt=()
for tool in dsymutil llvm-symbolizer llvm-nm; do
    command -v "$tool" >/dev/null || need_apt+=(llvm)
done
if [ ${#need_apt[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || { echo "test.sh: install llvm (dsymutil, llvm-symbolizer)" >&2; exit 1; }
    # apt-get update only when the package lists are too old or missing to find it
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm >/dev/null 2>&1 \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm >/dev/null; }
fi

find_python() {  # find_python 3.12 -> path of a working CPython 3.12 interpreter
    local version=$1 candidate path
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$version".*/bin/python \
                     /root/.pyenv/versions/"$version".*/bin/python "python$version"; do
        path=$(command -v "$candidate" 2>/dev/null) || continue
        # a pyenv shim exists for every version but fails for those not selected: try it
        if "$path" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$version'.split('.')))" 2>/dev/null; then
            echo "$path"; return 0
        fi
    done
    return 1
}

versions=${HAWKWATCH_TEST_PYTHONS:-"3.11 3.12 3.13"}
first=1
for version in $versions; do
    python=$(find_python "$version") || { echo "test.sh: CPython $version not found (pyenv install $version)" >&2; exit 1; }
    venv=.venvs/py$version
    echo "=== CPython $version ($python)"
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[test]"
    if [ $first = 1 ]; then
        "$venv/bin/ruff" check src tests benchmarks examples
        "$venv/bin/mypy"
        first=0
    fi
    "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
done
echo "all checks passed on CPython $versions"
