#!/usr/bin/env bash
# Set up hawkwatch in .venv and show it catching real problems:
#   1. a web service with a slow launch, a memory leak and long GC pauses (resources, launch, GC);
#   2. an asyncio service whose handlers block its event loop (stalls with the blocking line),
#      run with the continuous profiler, whose samples become a flame graph, and the session as
#      one self-contained HTML report;
#   3. a client whose HTTP requests are slow, failing, duplicated and blocking its event loop;
#   4. real iOS crash reports (.crash, .ips, KSCrash) read and grouped.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
export HAWKWATCH_HOME=${HAWKWATCH_HOME:-$PWD/.hawkwatch-demo}
hawkwatch=.venv/bin/hawkwatch

echo "=== 1. a leaky, slow-to-launch web service"
$hawkwatch run --app-name demo -- .venv/bin/python examples/demo_app.py
$hawkwatch report

echo "=== 2. an asyncio service that blocks its event loop (with the profiler on)"
$hawkwatch run --app-name stall-demo --profile -- .venv/bin/python examples/stall_demo.py
$hawkwatch report
$hawkwatch profile --format svg -o "$HAWKWATCH_HOME/stall-demo-flamegraph.svg"
# the same session as one self-contained HTML file: timeline, launch, flame graph, stalls, exit
$hawkwatch report --format html -o "$HAWKWATCH_HOME/stall-demo-report.html"
echo "HTML report: $HAWKWATCH_HOME/stall-demo-report.html (open it in a web browser)"

echo "=== 3. a client with slow, failing, duplicate and loop-blocking HTTP requests"
$hawkwatch run --app-name network-demo -- .venv/bin/python examples/network_demo.py
$hawkwatch network

echo "=== 4. iOS crash reports from real apps, grouped by cause"
$hawkwatch crashes tests/fixtures/crash
