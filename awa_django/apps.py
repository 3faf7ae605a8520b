"""App configuration: registers system checks and discovers ``cron.py`` modules."""

from __future__ import annotations

from django.apps import AppConfig


class AwaDjangoConfig(AppConfig):
    name = "awa_django"
    verbose_name = "Awa periodic jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Deliberately boring: no queries. Importing checks registers them; a
        # cron.py that declares an invalid schedule raises InvalidSchedule here,
        # so every management command fails at startup, before any write.
        from . import checks  # noqa: F401
        from .logs import install
        from .schedules.declaration import autodiscover

        # Data in awa_django's log records is escaped for plain-text handlers.
        install()
        autodiscover()
