"""App configuration: registers system checks and discovers ``cron.py`` modules."""

from __future__ import annotations

from django.apps import AppConfig


class AwaDjangoConfig(AppConfig):
    name = "awa_django"
    verbose_name = "Awa periodic jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Deliberately boring: no queries. Every system check is registered; a
        # cron.py that declares an invalid schedule is recorded by autodiscover()
        # and reported by the system checks (one line naming the schedule and
        # the field), so every command that runs them stops before any write,
        # and runcron refuses to start even with --skip-checks.
        # Imported here, not at the top: Django imports apps.py before the app
        # registry is ready, and the checks import the models' modules.
        from .checks import register_checks
        from .declarations.declaration import autodiscover
        from .logs import install

        # Data in awa_django's log records is escaped for plain-text handlers.
        install()
        register_checks()
        autodiscover()
