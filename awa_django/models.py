"""Django models over awa_django's tables.

Table and column names are a public contract (see docs/reference/tables.md).
Invariants that must hold for every writer (the compare-and-swap fire, the
``next_fire_at`` invalidation, change notifications) live in SQL objects
installed by migrations from ``awa_django/sql/``; these models only describe
the columns.
"""

from __future__ import annotations

import sys
from typing import Any

from django.db import models
from django.db.models.fields.json import KT
from django.db.models.functions import Length, Now, Trim
from django.db.models.lookups import Range

from . import contract
from .contract import DURATION_MAX_SECONDS as MAX_DURATION
from .db.jsonb import MANIFEST_WRAPS, GuardedJSONField
from .terminal import printable


class TextArrayField(models.Field):  # type: ignore[type-arg]
    """A PostgreSQL ``text[]`` column.

    Django's ArrayField would force ``django.contrib.postgres`` into every
    user's INSTALLED_APPS; psycopg already maps ``text[]`` to ``list[str]``.
    The database default (``'{}'``) is set in ``sql/0002_cron_core.sql``.
    """

    description = "List of strings (text[])"

    def db_type(self, connection: Any) -> str:
        return "text[]"

    def get_prep_value(self, value: Any) -> Any:
        return None if value is None else [str(v) for v in value]

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value


class MissedFirePolicy(models.TextChoices):
    COALESCE = "coalesce", "Coalesce (latest missed fire only)"
    CATCH_UP = "catch_up", "Catch up (every missed fire, in order)"


class OverlapPolicy(models.TextChoices):
    ALLOW = "allow", "Allow (runs may overlap)"
    SKIP = "skip", "Skip (no slot while a job is unfinished)"
    BUFFER_ONE = "buffer_one", "Buffer one (one runs, at most one waits)"


class CronJob(models.Model):
    """One schedule (``awa_cron_jobs``)."""

    name = models.TextField(primary_key=True)
    # The timing: a cron expression, or an interval of every_seconds from
    # anchor (NULL: the row's creation truncated to the second); exactly one.
    cron_expr = models.TextField(null=True, blank=True)
    every_seconds = models.IntegerField(null=True, blank=True)
    anchor = models.DateTimeField(null=True, blank=True)
    timezone = models.TextField(default="UTC", db_default="UTC")
    kind = models.TextField(help_text="Module path of the django.tasks Task to run.")
    queue = models.TextField(default="default", db_default="default")
    args = GuardedJSONField(default=dict, db_default={}, help_text='{"args": [...], "kwargs": {...}}')
    priority = models.IntegerField(default=0, db_default=0)
    max_attempts = models.IntegerField(default=3, db_default=3)
    tags = TextArrayField(default=list, blank=True)
    metadata = GuardedJSONField(default=dict, db_default={}, blank=True)
    missed_fire_policy = models.TextField(
        choices=MissedFirePolicy.choices,
        default=MissedFirePolicy.COALESCE,
        db_default=MissedFirePolicy.COALESCE,
    )
    # Execution policies, decided by the fire statement (awa_cron_fire_v8).
    overlap = models.TextField(
        choices=OverlapPolicy.choices, default=OverlapPolicy.ALLOW, db_default=OverlapPolicy.ALLOW
    )
    # Seconds after its fire time past which a slot is not enqueued; NULL = none.
    starting_deadline = models.FloatField(null=True, blank=True)
    # Seconds: each job's run_at is its slot plus an offset in [0, jitter).
    jitter = models.FloatField(default=0, db_default=0)
    # The compare-and-swap token: the *fire time* of the last automatic fire.
    last_enqueued_at = models.DateTimeField(null=True, blank=True)
    # Derived: the next automatic fire, or NULL when it must be (re)computed.
    # A trigger resets it whenever something it depends on changes.
    next_fire_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_by = models.TextField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    retired_by = models.TextField(null=True, blank=True)
    retired_revision = models.TextField(null=True, blank=True)
    # Owner-scoped reconciliation: NULL = unowned (additive sync). There is
    # deliberately no foreign key; ownership changes only by operator action.
    owner_id = models.TextField(null=True, blank=True, db_index=True)
    # A row the evaluator could not handle (bad value written by raw SQL or an
    # old writer) is parked: skipped, with the reason, until it evaluates again.
    parked_at = models.DateTimeField(null=True, blank=True, editable=False)
    parked_reason = models.TextField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "awa_cron_jobs"
        ordering = ["name"]
        verbose_name = "cron schedule"
        # Operator actions in the admin, one permission each.
        permissions = [
            ("pause_cronjob", "Can pause and resume cron schedules"),
            ("trigger_cronjob", "Can trigger cron schedules now"),
            ("retire_cronjob", "Can retire, restore and adopt cron schedules"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(missed_fire_policy__in=MissedFirePolicy.values),
                name="awa_cron_jobs_missed_fire_policy_check",
            ),
            models.CheckConstraint(
                condition=models.Q(overlap__in=OverlapPolicy.values),
                name="awa_cron_jobs_overlap_check",
            ),
            models.CheckConstraint(
                condition=models.Q(starting_deadline__isnull=True) | models.Q(starting_deadline__gt=0),
                name="awa_cron_jobs_starting_deadline_check",
            ),
            models.CheckConstraint(condition=models.Q(jitter__gte=0), name="awa_cron_jobs_jitter_check"),
            # Installed by sql/0027_option_ranges.sql: finite (NaN and Infinity
            # pass the two checks above), at most contract.DURATION_MAX_SECONDS.
            models.CheckConstraint(
                condition=models.Q(starting_deadline__isnull=True)
                | models.Q(starting_deadline__gt=0, starting_deadline__lte=MAX_DURATION),
                name="awa_cron_jobs_starting_deadline_range_check",
            ),
            models.CheckConstraint(
                condition=models.Q(jitter__gte=0, jitter__lte=MAX_DURATION),
                name="awa_cron_jobs_jitter_range_check",
            ),
            models.CheckConstraint(
                condition=models.Q(cron_expr__isnull=True, every_seconds__isnull=False)
                | models.Q(cron_expr__isnull=False, every_seconds__isnull=True),
                name="awa_cron_jobs_timing_check",
            ),
            models.CheckConstraint(
                condition=models.Q(every_seconds__isnull=True) | models.Q(every_seconds__gte=1),
                name="awa_cron_jobs_every_seconds_check",
            ),
            models.CheckConstraint(
                condition=models.Q(anchor__isnull=True) | models.Q(every_seconds__isnull=False),
                name="awa_cron_jobs_anchor_check",
            ),
            models.CheckConstraint(
                condition=Range(Length("name"), (1, 200)),
                name="awa_cron_jobs_name_check",
            ),
            models.CheckConstraint(
                condition=models.Q(max_attempts__gte=1, max_attempts__lte=1000),
                name="awa_cron_jobs_max_attempts_check",
            ),
            models.CheckConstraint(
                condition=models.Q(priority__gte=-100, priority__lte=100),
                name="awa_cron_jobs_priority_check",
            ),
        ]
        indexes = [
            # The evaluator reads only due rows: O(due), not O(all).
            models.Index(
                fields=["next_fire_at"],
                name="awa_cron_jobs_due",
                condition=models.Q(paused_at__isnull=True, retired_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        # Shown in page titles, breadcrumbs and history: control and bidi
        # characters written out, as everywhere a name is shown.
        return printable(self.name)

    def _is_set(self, column: str) -> bool:
        # Rows loaded by the operator views (actions.schedules.TIMESTAMP_COLUMNS) hold
        # a timestamp no datetime can hold ('infinity' written by raw SQL) as
        # None plus its text: the column is set all the same.
        return getattr(self, column) is not None or getattr(self, f"{column}_text", None) is not None

    @property
    def timing_text(self) -> str:
        """The timing as written: the cron expression, or the interval ("every 90s")."""
        if self.every_seconds is not None:
            start = "" if self.anchor is None else f" from {self.anchor.isoformat()}"
            return f"every {self.every_seconds}s{start}"
        return self.cron_expr or ""

    @property
    def is_paused(self) -> bool:
        return self._is_set("paused_at")

    @property
    def is_retired(self) -> bool:
        return self._is_set("retired_at")

    @property
    def is_parked(self) -> bool:
        return self._is_set("parked_at")


class JobState(models.TextChoices):
    AVAILABLE = "available"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    COMPLETED = "completed"
    RETRYABLE = "retryable"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Job(models.Model):
    """One task run request (``awa_jobs``): a cron fire or a ``Task.enqueue()``."""

    id = models.BigAutoField(primary_key=True)
    kind = models.TextField()
    queue = models.TextField(default="default", db_default="default")
    args = GuardedJSONField(default=dict, db_default={})
    state = models.TextField(
        choices=JobState.choices, default=JobState.AVAILABLE, db_default=JobState.AVAILABLE
    )
    priority = models.IntegerField(default=0, db_default=0)
    attempt = models.IntegerField(default=0, db_default=0)
    max_attempts = models.IntegerField(default=3, db_default=3)
    run_at = models.DateTimeField(db_default=Now())
    created_at = models.DateTimeField(db_default=Now())
    attempted_at = models.DateTimeField(null=True, blank=True)
    # The first attempt's start (TaskResult.started_at); kept by a trigger.
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    errors = GuardedJSONField(default=list, db_default=[])
    result = GuardedJSONField(null=True, blank=True)
    tags = TextArrayField(default=list, blank=True)
    metadata = GuardedJSONField(default=dict, db_default={})
    # One entry per attempt: the id of the worker that claimed it.
    worker_ids = TextArrayField(default=list, blank=True)
    # Flow control (awa_django.enqueue): one unfinished job per unique_key; at
    # most concurrency_limit running jobs per concurrency_key.
    unique_key = models.TextField(null=True, blank=True)
    concurrency_key = models.TextField(null=True, blank=True)
    concurrency_limit = models.IntegerField(null=True, blank=True)

    class Meta:
        db_table = "awa_jobs"
        ordering = ["id"]
        permissions = [("cancel_job", "Can cancel and retry jobs")]
        indexes = [
            # The worker's claim: ready jobs in priority, then run_at order.
            models.Index(
                models.F("priority").desc(),
                "run_at",
                "id",
                name="awa_jobs_ready",
                condition=models.Q(state__in=["available", "scheduled", "retryable"]),
            ),
            # Rescue scans running jobs by heartbeat age.
            models.Index(
                fields=["heartbeat_at"], name="awa_jobs_running", condition=models.Q(state="running")
            ),
            # Pruning finds finished jobs by age without scanning the queue.
            models.Index(
                fields=["finished_at"],
                name="awa_jobs_finished",
                condition=models.Q(state__in=["completed", "failed", "cancelled"]),
            ),
            # One schedule's jobs, newest first (the admin's last fires and its
            # ?cron_name= filter), without sorting every job of the schedule.
            models.Index(
                KT("metadata__cron_name"),
                models.F("id").desc(),
                name="awa_jobs_cron_name_id",
                condition=models.Q(metadata__has_key=contract.CRON_NAME_KEY),
            ),
            # The claim counts a concurrency key's running jobs.
            models.Index(
                fields=["concurrency_key"],
                name="awa_jobs_concurrency_running",
                condition=models.Q(concurrency_key__isnull=False, state="running"),
            ),
            # A rate-limited queue's starts in the last period.
            models.Index(
                fields=["queue", "attempted_at"],
                name="awa_jobs_queue_attempted",
                condition=models.Q(attempted_at__isnull=False),
            ),
        ]
        constraints = [
            # One unfinished job per unique_key.
            models.UniqueConstraint(
                fields=["unique_key"],
                name="awa_jobs_unique_key",
                condition=models.Q(
                    unique_key__isnull=False, state__in=["available", "scheduled", "running", "retryable"]
                ),
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=JobState.values), name="awa_jobs_state_check"
            ),
            # Installed by sql/0009_task_outcomes.sql (django.tasks' range).
            models.CheckConstraint(
                condition=models.Q(priority__gte=-100, priority__lte=100), name="awa_jobs_priority_check"
            ),
        ]

    def __str__(self) -> str:
        return printable(f"{self.kind}#{self.id}")

    @property
    def cron_name(self) -> str | None:
        return self.metadata.get(contract.CRON_NAME_KEY) if isinstance(self.metadata, dict) else None


class QueueMeta(models.Model):
    """Per-queue operator state (``awa_queue_meta``). Pause is enforced at dispatch."""

    queue = models.TextField(primary_key=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_by = models.TextField(null=True, blank=True)

    class Meta:
        db_table = "awa_queue_meta"
        verbose_name = "queue"

    def __str__(self) -> str:
        return printable(self.queue)


class RuntimeInstance(models.Model):
    """One running ``runcron``/``runtasks`` process (``awa_runtime_instances``).

    Written every ``AWA_SNAPSHOT_INTERVAL``; the evidence reconciliation reads.
    """

    instance_id = models.UUIDField(primary_key=True)
    hostname = models.TextField()
    pid = models.IntegerField()
    version = models.TextField()
    role = models.TextField()
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField(db_default=Now())
    snapshot_interval_ms = models.BigIntegerField()
    leader = models.BooleanField(default=False)
    queues = GuardedJSONField(default=list, db_default=[])
    shutting_down = models.BooleanField(default=False)
    # NULL for writers that predate the reconciliation protocol.
    cron_protocol = models.IntegerField(null=True, blank=True)
    # The version of the fire statement the process runs (5: awa_cron_fire_v5,
    # which knows the execution policies; 6: awa_cron_fire_v6, which knows
    # interval schedules; 7: awa_cron_fire_v7, v6 with a cheaper overlap
    # check; 8: awa_cron_fire_v8, v7 recording unique-key skips); NULL for
    # writers that predate it.
    cron_fire_version = models.IntegerField(null=True, blank=True)
    # When the process last made progress (leader: last evaluation pass); see
    # awa_django/health.py. NULL for writers that predate it.
    last_pass_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "awa_runtime_instances"
        verbose_name = "runtime instance"
        indexes = [models.Index(fields=["-last_seen_at"], name="awa_runtime_last_seen")]

    def __str__(self) -> str:
        return printable(f"{self.role}@{self.hostname}:{self.pid}")


class CronOwner(models.Model):
    """Reconciliation state of one owner (``awa_cron_owners``)."""

    owner_id = models.TextField(primary_key=True)
    # Certificate: the manifest whose definitions are synchronised (all its
    # names exist, active and owned).
    synced_hash = models.TextField(null=True, blank=True)
    # The durable agreement (grace) clock.
    agreed_hash = models.TextField(null=True, blank=True)
    agreed_since = models.DateTimeField(null=True, blank=True)
    evidence_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "awa_cron_owners"
        verbose_name = "cron owner"
        constraints = [
            models.CheckConstraint(
                condition=Range(Length(Trim("owner_id")), (1, 200)), name="awa_cron_owners_owner_id_check"
            )
        ]

    def __str__(self) -> str:
        return printable(self.owner_id)


class CronManifest(models.Model):
    """An owner's complete desired schedule set, stored once per hash."""

    pk = models.CompositePrimaryKey("owner", "desired_hash")
    owner = models.ForeignKey(CronOwner, on_delete=models.PROTECT, db_column="owner_id")
    desired_hash = models.TextField()
    # A list of definitions (objects holding args and metadata): two levels of
    # its own around values held to AWA_MAX_JSON_DEPTH; as large as the owner's
    # schedules make it.
    manifest = GuardedJSONField(wraps=MANIFEST_WRAPS, size_limit=sys.maxsize)

    class Meta:
        db_table = "awa_cron_manifests"
        verbose_name = "cron manifest"


class CronDeclaration(models.Model):
    """A live runtime's claim: "owner X wants manifest H" (``awa_cron_declarations``)."""

    instance = models.OneToOneField(
        RuntimeInstance,
        primary_key=True,
        db_column="instance_id",
        # Also ON DELETE CASCADE in the database (migration 0005), so raw
        # deletes (snapshot cleanup) cascade too.
        on_delete=models.CASCADE,
    )
    owner = models.ForeignKey(CronOwner, on_delete=models.PROTECT, db_column="owner_id")
    revision = models.TextField()
    desired_hash = models.TextField()
    grace_ms = models.BigIntegerField()
    last_seen_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "awa_cron_declarations"
        verbose_name = "cron declaration"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(grace_ms__gte=0), name="awa_cron_declarations_grace_check"
            )
        ]


class Queue(models.Model):
    """A queue as operators see it (the ``awa_queues`` view): depth by state and pause.

    Read-only: a queue is listed when it has jobs, operator state or a schedule.
    Pause and resume go through :mod:`awa_django.operations.queues`.
    """

    queue = models.TextField(primary_key=True)
    paused_at = models.DateTimeField(null=True)
    paused_by = models.TextField(null=True)
    available = models.BigIntegerField()
    scheduled = models.BigIntegerField()
    running = models.BigIntegerField()
    retryable = models.BigIntegerField()
    completed = models.BigIntegerField()
    failed = models.BigIntegerField()
    cancelled = models.BigIntegerField()

    class Meta:
        managed = False
        db_table = "awa_queues"
        ordering = ["queue"]
        verbose_name = "queue"
        permissions = [("pause_queue", "Can pause and resume queues")]

    def __str__(self) -> str:
        return printable(self.queue)
