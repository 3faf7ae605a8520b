"""Running tasks: the ``django.tasks`` backend over ``awa_jobs`` and its worker.

``compat`` is the one module that knows whether ``django.tasks`` (Django 6) or the
``django-tasks`` backport (Django 5.2) is installed; ``backend`` is
:class:`~awa_django.tasks.backend.AwaBackend` (enqueue, results);
``enqueue`` is ``awa_django.enqueue`` (unique and concurrency keys); ``limits``
parses the backend's ``QUEUE_LIMITS`` for the claim;
``payloads`` checks what a job may store; ``paths`` loads a job's task from its
dotted path; ``context`` tells a running task about its job; ``results`` builds the
``TaskResult`` of a job row; ``worker`` is ``runtasks``: it claims jobs and
hands them to its ``runner`` threads (which call back through
``runner.Pool``), and ``outcomes`` records how each attempt ended, completing
the successful ones in batches. ``tracing`` carries an OpenTelemetry trace
from enqueue (or a cron fire) to the attempts (a no-op without the ``otel`` extra).
"""

__all__ = [
    "backend",
    "compat",
    "context",
    "enqueue",
    "limits",
    "paths",
    "payloads",
    "results",
    "tracing",
    "worker",
]
