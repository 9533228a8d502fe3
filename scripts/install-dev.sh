#!/usr/bin/env bash
# Installs everything the test suite needs into ./.venv: runtime + dev + model requirements, the
# package itself (editable), and Debian's Chromium for the browser tests. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# torch first, pinned: the CPU wheel is on this machine's disk; a bare `torch` would pull a CUDA build.
.venv/bin/pip install --quiet "torch==2.13.0"
.venv/bin/pip install --quiet -r requirements-dev.txt -r requirements-models.txt -e .
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
  else
    echo "install Debian's chromium (sudo apt-get install -y chromium) for the browser tests" >&2
  fi
fi
