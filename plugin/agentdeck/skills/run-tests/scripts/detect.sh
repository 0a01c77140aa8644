#!/bin/sh
# The project's likely test commands, likeliest first (one a line). Reads only.
dir="${1:-.}"
cd "$dir" 2>/dev/null || exit 0
if [ -f pyproject.toml ] || [ -f pytest.ini ] || [ -f setup.cfg ] || [ -d tests ]; then
    if [ -x .venv/bin/pytest ]; then echo ".venv/bin/pytest -q"; else echo "python -m pytest -q"; fi
fi
if [ -f package.json ] && grep -q '"test"' package.json; then echo "npm test --silent"; fi
if [ -f Cargo.toml ]; then echo "cargo test --quiet"; fi
if [ -f go.mod ]; then echo "go test ./..."; fi
if [ -f Makefile ] && grep -q '^test:' Makefile; then echo "make test"; fi
exit 0
