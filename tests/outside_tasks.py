"""Tasks in a module outside every installed app (AWA_TASK_MODULES tests)."""

from awa_django.client.compat import task


@task
def outside(label: str = "outside") -> str:
    return label
