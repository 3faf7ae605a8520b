"""Operator verbs, shared by the admin, ``manage.py awa`` and user code.

``schedules``: pause, resume, trigger, remove and upcoming fires; ``owners``:
adopt, retire, restore, retire and restore an owner; ``queues``: queue pause,
job cancel, retry and prune. Each validates its actor with
:func:`~awa_django.actions.common.require_actor` and returns an
:class:`~awa_django.actions.common.ActionResult`. ``declarations`` (no verbs)
compares schedule rows with this code's declarations (no longer declared,
declared here but owned elsewhere), for ``awa cron list``, the admin and
``awa health``. ``runtime_schedules`` creates, changes and deletes runtime
schedules; ``celery_beat`` imports django-celery-beat's rows as runtime
schedules.
"""

__all__ = ["common", "declarations", "history", "owners", "queues", "schedules"]
