"""The client side of ``django.tasks``: what enqueues a job and reads its result.

``backend`` is :class:`~awa_django.client.backend.AwaBackend` (enqueue,
results); ``enqueue`` is ``awa_django.enqueue`` (unique and concurrency keys);
``limits`` parses the backend's ``QUEUE_LIMITS`` for the claim; ``payloads``
checks what a job may store; ``paths`` loads a job's task from its dotted path
(only from installed apps and ``AWA_TASK_MODULES``); ``compat`` is the one module
that knows whether ``django.tasks`` (Django 6) or the ``django-tasks`` backport
(Django 5.2) is installed; ``tracing`` carries an OpenTelemetry trace from
enqueue (or a cron fire) to the attempts (a no-op without the ``otel`` extra).
"""

__all__ = ["backend", "compat", "enqueue", "limits", "paths", "payloads", "tracing"]
