#!/usr/bin/env bash
# Install the project with every extra and the test tools, then lint, check formatting and run the test suite.
# Works on a fresh machine without a venv: `bash scripts/test.sh` (pytest arguments pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[all,test]"
ruff check .
ruff format --check .
python -m pytest -q -n 2 --dist loadfile "$@"
