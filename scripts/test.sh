#!/usr/bin/env bash
# Set up and run every check: ruff and mypy once, then the test suite on CPython 3.11, 3.12 and
# 3.13 (the agent's frames and threading differ between them). Each Python gets its own venv in
# .venvs/. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages the tests need (Debian); installs only what is missing -----------------
# xvfb + xdotool: the stall monitor's Tk test runs a real Tk app on an X server of its own and
# clicks its button through X. The libraries: what PySide6's Qt loads for the stall monitor's
# Qt test (offscreen platform).
apt_packages=()
command -v Xvfb >/dev/null || apt_packages+=(xvfb)
command -v xdotool >/dev/null || apt_packages+=(xdotool)
for pair in libEGL.so.1:libegl1 libGL.so.1:libgl1 libX11.so.6:libx11-6 \
            libxkbcommon.so.0:libxkbcommon0 libfontconfig.so.1:libfontconfig1 \
            libfreetype.so.6:libfreetype6 libglib-2.0.so.0:libglib2.0-0 libdbus-1.so.3:libdbus-1-3; do
    ldconfig -p 2>/dev/null | grep -q "${pair%%:*}" || apt_packages+=("${pair##*:}")
done
if [ ${#apt_packages[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "test.sh: installing ${apt_packages[*]} (apt)"
    $sudo apt-get install -y --no-install-recommends "${apt_packages[@]}" >/dev/null 2>&1 || {
        $sudo apt-get update >/dev/null
        $sudo apt-get install -y --no-install-recommends "${apt_packages[@]}" >/dev/null
    }
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
