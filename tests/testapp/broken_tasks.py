"""A module of an installed app whose import raises (the worker fails its jobs, not itself)."""

raise RuntimeError("broken_tasks cannot be imported")
