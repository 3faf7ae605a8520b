"""A module whose import raises with a message PostgreSQL cannot store (worker audit)."""

raise ImportError("cannot load \x00 this \ud800 module")
