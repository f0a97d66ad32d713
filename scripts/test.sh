#!/usr/bin/env bash
# Installs everything the test suite needs (Python packages, headless Chromium, Node) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements-dev.txt
MISSING=""
command -v chromium >/dev/null 2>&1 || MISSING="chromium"
command -v node >/dev/null 2>&1 || MISSING="$MISSING nodejs"
# Debian packages npm apart from nodejs
command -v npm >/dev/null 2>&1 || MISSING="$MISSING npm"
if [ -n "$MISSING" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # shellcheck disable=SC2086  # one word per package
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $MISSING >/dev/null
fi
# The Python's lint (pyproject.toml: pyflakes, pycodestyle's errors, import order, 120 columns).
python3 -m ruff check --quiet .
# The viewer's JavaScript type-checked from its JSDoc (tsconfig.json); TypeScript (package.json) is a dev tool only,
# installed when node_modules lacks the locked version (npm ls).
npm ls --silent >/dev/null 2>&1 || npm ci --silent
npx --no-install tsc -p tsconfig.json
# The browser viewer's ES modules (anatomy/viewer/), by Node's own test runner; a failure stops the script.
node --test tests/js/
export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
# Two workers for the tests that neither time nor measure anything against an idle machine (a test file's tests stay
# on one worker, with its module's app and browser), then the `solo` ones alone (pytest.ini); both run, whatever the
# first gives, and the script fails if either did (a part that `$@` leaves empty, pytest's status 5, is no failure).
status=0
part() { python3 -m pytest -q "$@" || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }; }
part --durations=40 -m "not solo" -n 2 --dist loadfile "$@"
part --durations=20 -m solo "$@"
exit $status
