"""The test project with django-celery-beat installed, for the import from it.

Only the process test of ``awa import-celery-beat`` runs with these settings,
on a database of its own: the package's migrations stay out of every other
test database.
"""

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "django_celery_beat"]
