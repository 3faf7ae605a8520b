"""A module whose import raises KeyboardInterrupt: module code, not a signal (worker audit)."""

raise KeyboardInterrupt("raised by module-level code")
