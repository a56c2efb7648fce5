#!/usr/bin/env bash
# Install the system packages and npm tools the tests use, only those missing (Debian, as root or
# with sudo). Run by scripts/test.sh; safe to run again.
#
#   llvm             dsymutil links the DWARF of the arm64 Mach-O test binaries into dSYMs;
#                    llvm-symbolizer is the oracle symbolication is checked against
#   xvfb, xdotool    the stall monitor's Tk test: a real Tk app on an X server of its own,
#                    its button clicked through X
#   libegl1 ...      what PySide6's Qt loads for the stall monitor's Qt test (offscreen)
#   chromium         opens the SVG flame graph and speedscope's viewer (tests/browser.py)
#   npm, speedscope  speedscope's viewer and file-format schema, for the export tests
#   postgresql       the collector server's tests start a real PostgreSQL (initdb + pg_ctl)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=()
need_command() {  # need_command COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 || packages+=("$2")
}
need_library() {  # need_library SONAME PACKAGE
    ldconfig -p 2>/dev/null | grep -q "$1" || packages+=("$2")
}

need_command dsymutil llvm
need_command llvm-symbolizer llvm
need_command Xvfb xvfb
need_command xdotool xdotool
need_command chromium chromium
need_command npm npm
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || packages+=(postgresql)
need_library libEGL.so.1 libegl1
need_library libGL.so.1 libgl1
need_library libX11.so.6 libx11-6
need_library libxkbcommon.so.0 libxkbcommon0
need_library libfontconfig.so.1 libfontconfig1
need_library libfreetype.so.6 libfreetype6
need_library libglib-2.0.so.0 libglib2.0-0
need_library libdbus-1.so.3 libdbus-1-3

if [ ${#packages[@]} -gt 0 ]; then
    mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "system-deps.sh: installing ${packages[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    # apt-get update only when the package lists are too old or missing to find them
    $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null 2>&1 || {
        $sudo apt-get update -qq >/dev/null
        $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    }
fi

if [ ! -f .cache/npm/node_modules/speedscope/dist/release/file-format-schema.json ]; then
    npm install --prefix .cache/npm --silent --no-audit --no-fund speedscope@1.25.0
fi
