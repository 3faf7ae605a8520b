"""Not part of an installed app: runtasks must never import it from a row's kind."""

import os

os.environ["AWA_IMPORT_SENTINEL"] = "imported"


def task() -> None:
    """Never called."""
