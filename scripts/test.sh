#!/usr/bin/env bash
# Set up and run every check: ruff and mypy once, the whole test suite on the first CPython (3.11),
# and the agent's tests (agent, store, end to end, layers) on 3.12 and 3.13, where frames and
# threading differ. PostgreSQL and browser tests run once, with the whole suite. Each Python gets
# its own venv in .venvs/. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/system-deps.sh  # apt packages and npm tools the tests use, when missing

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
    fi
    if [ $first = 1 ]; then
        first=0
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
    else
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" \
            tests/agent tests/store tests/e2e tests/test_layers.py tests/test_public_api.py
    fi
done
echo "all checks passed on CPython $versions"
