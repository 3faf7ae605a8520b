"""The operators' console through Django's test client: users, messages, rows.

``staff`` logs in a staff user holding only the given permissions (``VIEW_ALL``
lets them see every awa page); ``texts`` reads the messages a response shows;
``live_leader`` stores a live ``runcron`` leader (the console marks rows
overdue only then); ``owned`` creates an owner with its schedules.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import Permission, User
from django.test import Client

from awa_django.models import CronOwner, RuntimeInstance
from tests.factories import CronJobFactory


def texts(response: Any) -> list[str]:
    """The messages the response shows the user."""
    return [str(m) for m in response.context["messages"]]


def staff(username: str, *codenames: str) -> Client:
    """A client logged in as a staff user holding only these awa_django permissions."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    perms = Permission.objects.filter(content_type__app_label="awa_django", codename__in=codenames)
    assert perms.count() == len(codenames), codenames
    user.user_permissions.set(perms)
    client = Client()
    client.force_login(user)
    return client


VIEW_ALL = ("view_cronjob", "view_job", "view_queue", "view_cronowner", "view_runtimeinstance")


def live_leader() -> None:
    """Store a live ``runcron`` leader: the console marks rows overdue only with one."""
    RuntimeInstance.objects.create(
        instance_id=uuid.uuid4(),
        hostname="box",
        pid=42,
        version="t",
        role="runcron",
        started_at=datetime.now(UTC),
        snapshot_interval_ms=10_000,
        leader=True,
        cron_protocol=1,
    )


def owned(owner: str, *names: str) -> None:
    """Owner ``owner`` with a schedule of each name."""
    CronOwner.objects.get_or_create(owner_id=owner)
    for name in names:
        CronJobFactory(name=name, owner_id=owner)
