"""A module that fails at import (validation tests)."""

raise RuntimeError("boom at import")
