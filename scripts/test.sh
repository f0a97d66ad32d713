#!/usr/bin/env bash
# Installs everything the test suite needs (Python packages, headless Chromium) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements-dev.txt
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
python3 -m pytest -q --durations=15 "$@"
