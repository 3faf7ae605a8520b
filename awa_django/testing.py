"""What the tests of your project use: one evaluation pass, the definition sync,
the worker loop and schedules built without registering them.

``evaluate()`` runs one pass of the leader on the rows already in the database
(no lock, no sync) and returns a :class:`PassResult`; ``sync_schedules()``
writes declared schedules to the database as ``runcron`` does before its
first pass; ``build_schedule()`` validates a declaration and returns its
:class:`Schedule` without registering it; :class:`Worker` is the ``runtasks``
loop, for tests that drive it directly. See ``docs/howto/testing-your-schedules.md``.

The code lives in the subpackages; this module only re-exports it.
"""

from __future__ import annotations

from .declarations.builder import build_schedule
from .declarations.shape import Schedule
from .declarations.sync import sync_schedules
from .leader.evaluator import PassResult, evaluate
from .worker.loop import Worker

__all__ = ["PassResult", "Schedule", "Worker", "build_schedule", "evaluate", "sync_schedules"]
