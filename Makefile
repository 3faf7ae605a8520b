# Two commands a newcomer needs:  make demo   and   make test
# Without DATABASE_URL both start an embedded PostgreSQL (pgserver) in .pgdata/.

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_SECONDS ?= 0

.PHONY: venv test demo check lint clean

$(STAMP): pyproject.toml
	@test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) scripts/with_db.py $(PY) -m pytest $(PYTEST_ARGS)

demo: $(STAMP)
	$(PY) scripts/with_db.py $(PY) scripts/demo.py --seconds $(DEMO_SECONDS)

lint: $(STAMP)
	$(VENV)/bin/ruff check awa_django tests scripts example_project
	$(VENV)/bin/mypy awa_django

check: $(STAMP)
	$(PY) scripts/with_db.py $(PY) manage.py check

clean:
	rm -rf $(VENV) .pgdata .pytest_cache
