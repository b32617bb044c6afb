# runlens: `make run` starts everything on a fresh machine; `make test` runs the whole suite.
PY := .venv/bin/python
STAMP := .venv/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test check bench sanitize venv migrate clean

venv: $(STAMP)

# The native scanner (ingest/parsers/_scan.c) is built by the install: a changed C file installs again.
$(STAMP): pyproject.toml ingest/parsers/_scan.c
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	rm -f .venv/.installed-*; touch $(STAMP)

migrate: venv
	$(PY) manage.py migrate --noinput

run: venv
	scripts/run.sh

# The whole suite. PostgreSQL when DATABASE_URL names it (CI does), SQLite otherwise.
test: venv
	scripts/ensure-redis.sh
	$(PY) -m pytest $(PYTEST_ARGS)

# Lint, the import arrows of docs/architecture.md, types, then the whole suite.
check: venv
	.venv/bin/ruff check .
	.venv/bin/lint-imports
	.venv/bin/mypy
	$(MAKE) test

# The performance targets on a real stack (its own database and Redis db) and the parse of each
# mix of real logs (bench/mixes.py); prints the tables and writes bench/results.json.
# BENCH_ARGS="--quick" is a smoke run; BENCH_ARGS="--quick --sections mixes" about 2 minutes.
bench: venv
	$(PY) bench/run.py $(BENCH_ARGS)

# The native scanner under AddressSanitizer and UBSan: the parser tests and a seeded fuzz corpus of
# mutated real logs (scripts/fuzz_scan.py, FUZZ_INPUTS of them) run against it; any report fails.
sanitize: venv
	scripts/sanitize.sh

clean:
	rm -rf var .pytest_cache .hypothesis
