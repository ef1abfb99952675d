#!/usr/bin/env bash
# Install the project with every extra and the test tools, then lint, check formatting, build the docs strictly
# and run the test suite.
# Works on a fresh machine without a venv: `bash scripts/test.sh` (pytest arguments pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[all,test]"
ruff check .
ruff format --check .
# the documentation site, strict: a broken link, a missing reference or a docstring warning fails (nothing written here)
site_dir="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --site-dir "$site_dir"
rm -rf "$site_dir"
python -m pytest -q -n 2 --dist loadfile "$@"
