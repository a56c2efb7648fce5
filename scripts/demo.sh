#!/usr/bin/env bash
# Set up hawkwatch in .venv, run the demo app under it, and print what hawkwatch saw.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
export HAWKWATCH_HOME=${HAWKWATCH_HOME:-$PWD/.hawkwatch-demo}
.venv/bin/hawkwatch run --app-name demo -- .venv/bin/python examples/demo_app.py
.venv/bin/hawkwatch report
