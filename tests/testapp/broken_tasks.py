"""A module of an installed app whose import raises (issue 9 tests)."""

raise RuntimeError("broken_tasks cannot be imported")
