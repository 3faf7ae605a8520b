"""A module whose import raises an exception that cannot be printed (worker audit)."""


class ImportTimeError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("ImportTimeError.__str__ raised")


raise ImportTimeError("hidden")
