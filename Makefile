# runlens: `make run` starts everything on a fresh machine; `make test` runs the whole suite.
PY := .venv/bin/python
# One stamp per install, named for the pyproject.toml and C scanner it installed: a change installs again.
# The scanner is _scan.c and the per-format headers it includes (ingest/parsers/_scan_*.h).
SCANNER := $(sort $(wildcard ingest/parsers/_scan*.c ingest/parsers/_scan*.h))
HASH := $(shell cat pyproject.toml $(SCANNER) | cksum | cut -d' ' -f1)
RUNTIME := .venv/.runtime-$(HASH)
TESTTOOLS := .venv/.test-$(HASH)
# What `make test-fast` leaves out: tests that drive Chromium, start a web server or a Celery worker.
SLOW := browser or live or e2e

.PHONY: run test test-fast check bench sanitize venv migrate clean

# The development environment: what runs, and the test tools.
venv: $(TESTTOOLS)

# What `make run` needs, nothing more. The native scanner (ingest/parsers/_scan.c) is built by this
# install: a changed C file installs again.
$(RUNTIME): pyproject.toml $(SCANNER)
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q -e .
	rm -f .venv/.runtime-*; touch $(RUNTIME)

# The test extra's packages alone, read from pyproject.toml: installing '.[test]' would build the
# project again.
$(TESTTOOLS): $(RUNTIME)
	$(PY) -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]))' > .venv/requirements-test.txt
	$(PY) -m pip install -q -r .venv/requirements-test.txt
	rm -f .venv/.test-*; touch $(TESTTOOLS)

migrate: $(RUNTIME)
	$(PY) manage.py migrate --noinput

run: $(RUNTIME)
	scripts/run.sh

# The whole suite. PostgreSQL when DATABASE_URL names it (CI does), SQLite otherwise.
test: venv
	scripts/ensure-redis.sh
	$(PY) -m pytest $(PYTEST_ARGS)

# The edit loop: no browser, no live server, no worker process.
test-fast: venv
	scripts/ensure-redis.sh
	$(PY) -m pytest -m "not ($(SLOW))" $(PYTEST_ARGS)

# Lint, the import arrows of docs/architecture.md, types, the whole suite (Hypothesis derandomized:
# the same examples every run), then the property tests again with fresh random examples.
check: venv
	.venv/bin/ruff check .
	.venv/bin/lint-imports
	.venv/bin/mypy
	$(MAKE) test
	HYPOTHESIS_PROFILE=random $(PY) -m pytest -m "hypothesis and not ($(SLOW))" $(PYTEST_ARGS)

# The performance targets (bench/report.py) on a real stack (its own database and Redis db) and the
# parse of each mix of real logs (bench/mixes.py); prints the tables and writes bench/results.json.
# BENCH_ARGS="--quick" is a smoke run; BENCH_ARGS="--quick --sections mixes" about 2 minutes.
bench: venv
	$(PY) bench/run.py $(BENCH_ARGS)

# The native scanner under AddressSanitizer and UBSan: the parser tests and a seeded fuzz corpus of
# mutated real logs (scripts/fuzz_scan.py, FUZZ_INPUTS of them) run against it; any report fails.
sanitize: venv
	scripts/sanitize.sh

clean:
	rm -rf var .pytest_cache .hypothesis
