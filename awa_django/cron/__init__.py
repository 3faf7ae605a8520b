"""The cron engine: expressions in, fire times out (pure: no ORM, no settings).

``parse`` reads an expression into field sets and ``days`` holds the two day
fields as bit masks; ``zones`` resolves local times that a DST change repeats
or skips and holds ``DstPolicy``, a schedule's choices for them; ``search`` is :class:`~awa_django.cron.search.CronExpression` and the
fire-time search every process shares; ``legacy`` names where an expression
means something else in croniter; ``describe`` says an expression in words.
The modules of this package may share underscore names with each other;
nothing outside it does.
"""

__all__ = ["describe", "parse", "search"]
