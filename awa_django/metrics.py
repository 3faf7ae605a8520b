"""Prometheus metrics (optional: ``pip install awa-django[metrics]``).

Two kinds of numbers, served from one registry, :data:`REGISTRY`:

* **Process counters** counted by the process that does the work, through the
  ``observe_*`` hooks the leader and the worker call: fires by schedule, fire
  lateness, pass duration, claims, completions, retries, failures, rescues.
  They start at zero with the process, as Prometheus counters do. Busy worker
  slots and leadership come from the :class:`GaugeSource` objects registered
  with :func:`add_gauge_source` (the leader and the worker register
  themselves), read at scrape time.
* **Database gauges** read by :class:`DatabaseCollector` in one query bounded
  by ``AWA_METRICS_QUERY_TIMEOUT``: jobs by state and queue, schedules by
  state, the due backlog and its age, parked schedules, live runtimes and
  leaders. Every process (and the web view) reports the same values;
  aggregate them with ``max``, not ``sum``.

``runcron``/``runtasks --metrics-port PORT`` serve the registry over HTTP
(:func:`start_exporter`, on 127.0.0.1 unless ``--metrics-host`` says
otherwise); every scrape of one exporter shares the database gauges of
:class:`SharedGauges`, read at most once per ``AWA_METRICS_INTERVAL`` on one
connection, so a flood of scrapes cannot flood the database.
:func:`metrics_view` serves the registry from the web process, reading the
gauges on the request's connection. Without ``prometheus-client`` installed
the hooks do nothing.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import psycopg
from django.db import DatabaseError, InterfaceError, connections, transaction

from . import contract
from .conf import conf
from .db import sessions
from .store.health import GaugeRow, database_gauges, statement_timeout
from .terminal import printable

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

try:
    import prometheus_client
    from prometheus_client import CollectorRegistry, Counter, Histogram
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    from prometheus_client.registry import Collector
except ImportError:  # the optional extra is not installed
    prometheus_client = None  # type: ignore[assignment]

AVAILABLE = prometheus_client is not None
MISSING = "Prometheus metrics need the optional extra: pip install 'awa-django[metrics]'"

DEFAULT_HOST = "127.0.0.1"
Rows = list[GaugeRow]


def label(value: Any) -> str:
    """A label value as every metric carries it: control, bidi and separator
    characters written out (``\\x1b``, ``\\u202e``), as ``manage.py awa``
    prints them. Schedule and queue names come from raw SQL too; raw, an ESC or
    a U+202E would reach every dashboard and alert that shows the label."""
    return printable(value)


@dataclass(frozen=True, slots=True)
class ProcessGauges:
    """What one object of this process reports: whether it leads ``runcron``,
    and the task slots it has (``busy_slots`` of them running)."""

    leading: bool = False
    busy_slots: int = 0
    slots: int = 0


class GaugeSource(Protocol):
    """An object whose state this process's gauges report (a leader, a worker)."""

    def process_gauges(self) -> ProcessGauges:
        """Its values now; called at scrape time, from the scraping thread."""


_sources: weakref.WeakSet[GaugeSource] = weakref.WeakSet()


def add_gauge_source(source: GaugeSource) -> None:
    """Report ``source``'s :class:`ProcessGauges` while it exists."""
    _sources.add(source)


def process_gauges() -> ProcessGauges:
    """The sum over every live gauge source of this process (leading: any of them)."""
    found = [source.process_gauges() for source in list(_sources)]
    return ProcessGauges(
        leading=any(g.leading for g in found),
        busy_slots=sum(g.busy_slots for g in found),
        slots=sum(g.slots for g in found),
    )


def query_gauges(cursor: Any) -> Rows:
    """The database gauges (query ``metrics_database_gauges``) on ``cursor``, inside
    its transaction, under ``AWA_METRICS_QUERY_TIMEOUT`` (set for this transaction
    only, so a pooled session keeps its own setting)."""
    sessions.set_local(cursor, "statement_timeout", str(int(conf.METRICS_QUERY_TIMEOUT * 1000)))
    return database_gauges(cursor)


class SharedGauges:
    """The database gauges for every scrape of one exporter.

    Read at most once per ``AWA_METRICS_INTERVAL`` (a failure too), on one
    dedicated connection kept open between reads: concurrent scrapes wait for
    the read in progress and share its values, and never open a connection of
    their own.
    """

    def __init__(self, using: str = "default") -> None:
        self.using = using
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._rows: Rows | None = None  # None: the last read failed
        self._read_at: float | None = None  # monotonic time the last read ended

    def rows(self) -> Rows | None:
        """The gauge rows of the last read, refreshed when older than the interval;
        None when that read failed (logged)."""
        with self._lock:
            fresh = float(conf.METRICS_INTERVAL)
            if self._read_at is None or time.monotonic() - self._read_at >= fresh:
                self._rows = self._read()
                self._read_at = time.monotonic()
            return self._rows

    def _read(self) -> Rows | None:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = sessions.dedicated_connection(self.using, "metrics exporter")
                # ``using`` may go through a transaction-pooling PgBouncer: no
                # server-side prepared statements, whatever the read count.
                self._conn.prepare_threshold = None
            with self._conn.transaction(), self._conn.cursor() as cursor:
                return query_gauges(cursor)
        except psycopg.Error as exc:
            logger.warning("metrics: database gauges unavailable: %s", exc, extra={"event": "metrics.error"})
            self._drop_connection()
            return None

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close the connection, once a read in progress ends (the next read opens a new one)."""
        with self._lock:
            self._drop_connection()


if prometheus_client is not None:
    REGISTRY = CollectorRegistry(auto_describe=True)

    FIRES = Counter(
        "awa_cron_fires", "Cron slots fired by this process, by schedule.", ["schedule"], registry=REGISTRY
    )
    # Lateness of a fire: the job's insert time minus its slot, both database time.
    FIRE_LATENESS = Histogram(
        "awa_cron_fire_lateness_seconds",
        "Delay between a cron slot and the insert of its job.",
        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600),
        registry=REGISTRY,
    )
    PASS_DURATION = Histogram(
        "awa_cron_pass_duration_seconds",
        "Duration of the leader's evaluation passes.",
        buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        registry=REGISTRY,
    )
    PASSES = Counter(
        "awa_cron_passes", "Evaluation passes by outcome (ok, error).", ["outcome"], registry=REGISTRY
    )
    CLAIMED = Counter(
        "awa_jobs_claimed", "Attempts claimed by this worker, by queue.", ["queue"], registry=REGISTRY
    )
    FINISHED = Counter(
        "awa_jobs_finished",
        "Attempts this worker finished, by queue and outcome "
        "(completed, retryable = will be retried, failed, released).",
        ["queue", "outcome"],
        registry=REGISTRY,
    )
    RESCUED = Counter(
        "awa_jobs_rescued",
        "Stale attempts this worker rescued, by the state they got.",
        ["state"],
        registry=REGISTRY,
    )

    class ProcessCollector(Collector):
        """Gauges of this process's gauge sources (see :func:`add_gauge_source`)."""

        def collect(self) -> Iterator[GaugeMetricFamily]:
            now = process_gauges()
            leader = GaugeMetricFamily("awa_cron_leader", "1 while this process leads runcron.")
            leader.add_metric([], float(now.leading))
            yield leader
            busy = GaugeMetricFamily("awa_worker_busy_slots", "Tasks this process is running now.")
            slots = GaugeMetricFamily("awa_worker_slots", "Tasks this process can run at once.")
            busy.add_metric([], float(now.busy_slots))
            slots.add_metric([], float(now.slots))
            yield busy
            yield slots

    class DatabaseCollector(Collector):
        """The database gauges, in one bounded query: read from ``shared`` when
        given (the exporter), else on this thread's connection to ``using``."""

        def __init__(self, using: str = "default", shared: SharedGauges | None = None) -> None:
            self.using = using
            self.shared = shared

        def describe(self) -> Iterable[Any]:
            return []  # read at scrape time only; never query at registration

        def collect(self) -> Iterator[GaugeMetricFamily]:
            up = GaugeMetricFamily("awa_metrics_database_up", "1 if the database gauges could be read.")
            rows = self.shared.rows() if self.shared is not None else self._query()
            up.add_metric([], 0.0 if rows is None else 1.0)
            yield up
            if rows is not None:
                yield from gauge_families(rows)

        def _query(self) -> Rows | None:
            """The gauges on this thread's connection. A web request's connection
            (already open) is left to Django; one opened here is closed."""
            connection = connections[self.using]
            opened_here = connection.connection is None
            try:
                with transaction.atomic(using=self.using), connection.cursor() as cursor:
                    previous = statement_timeout(cursor)
                    rows = query_gauges(cursor)
                    sessions.set_local(cursor, "statement_timeout", previous)
                return rows
            except (DatabaseError, InterfaceError) as exc:
                logger.warning(
                    "metrics: database gauges unavailable: %s", exc, extra={"event": "metrics.error"}
                )
                return None
            finally:
                if opened_here:
                    connection.close()

    PROCESS = ProcessCollector()
    # Everything but the database gauges: what each registry serving them adds to its own.
    PROCESS_COLLECTORS: tuple[Collector, ...] = (
        FIRES,
        FIRE_LATENESS,
        PASS_DURATION,
        PASSES,
        CLAIMED,
        FINISHED,
        RESCUED,
        PROCESS,
    )
    REGISTRY.register(PROCESS)
    REGISTRY.register(DatabaseCollector())

    def exporter_registry(shared: SharedGauges) -> CollectorRegistry:
        """A registry like :data:`REGISTRY` whose database gauges come from ``shared``."""
        registry = CollectorRegistry(auto_describe=True)
        for collector in PROCESS_COLLECTORS:
            registry.register(collector)
        registry.register(DatabaseCollector(shared.using, shared))
        return registry


def gauge_families(rows: Sequence[tuple[str, str, str, float]]) -> Iterator[Any]:
    """Turn the rows of :func:`query_gauges` into metric families."""
    jobs = GaugeMetricFamily("awa_jobs", "Jobs in awa_jobs by queue and state.", labels=["queue", "state"])
    schedules = GaugeMetricFamily(
        "awa_cron_schedules", "Schedules by state (active, paused, retired).", labels=["state"]
    )
    runtimes = GaugeMetricFamily(
        "awa_runtime_instances", "Live runcron/runtasks processes by role.", labels=["role"]
    )
    due = GaugeMetricFamily(
        "awa_cron_due_backlog", "Active schedules due now (or awaiting evaluation), not yet fired."
    )
    due_age = GaugeMetricFamily(
        "awa_cron_due_backlog_age_seconds", "How late the oldest due, unfired schedule is."
    )
    parked = GaugeMetricFamily(
        "awa_cron_parked_schedules", "Active schedules parked because they cannot be evaluated."
    )
    leaders = GaugeMetricFamily("awa_cron_leaders", "Live runcron processes that report leading.")
    # Durable, fleet-wide (awa_cron_slot_counts): the same from every process.
    skipped = CounterMetricFamily(
        "awa_cron_slots_skipped",
        "Slots not enqueued because of a schedule's execution policy or unique key, by reason "
        "(overlap, unique, deadline).",
        labels=["reason"],
    )
    per_reason = {"overlap": 0.0, "unique": 0.0, "deadline": 0.0}
    values = {"due": 0.0, "due_age": 0.0, "parked": 0.0}
    per_role: dict[str, float] = {"runcron": 0.0, "runtasks": 0.0}
    leading = 0.0
    per_state = {"active": 0.0, "paused": 0.0, "retired": 0.0}
    for kind, raw_first, raw_second, value in rows:
        first, second = label(raw_first), label(raw_second)
        if kind == "jobs":
            jobs.add_metric([first, second], value)
        elif kind == "schedules":
            per_state[first] = value
        elif kind == "skipped":
            per_reason[first] = value
        elif kind == "runtimes":
            per_role[first] = per_role.get(first, 0.0) + value
            if second == "leader" and first == "runcron":
                leading += value
        else:
            values[kind] = value
    for state, count in per_state.items():
        schedules.add_metric([state], count)
    for role, count in per_role.items():
        runtimes.add_metric([role], count)
    due.add_metric([], values["due"])
    due_age.add_metric([], values["due_age"])
    parked.add_metric([], values["parked"])
    leaders.add_metric([], leading)
    for reason, count in per_reason.items():
        skipped.add_metric([reason], count)
    yield from (jobs, schedules, due, due_age, parked, runtimes, leaders, skipped)


# -- hooks (no-ops without prometheus-client) -----------------------------------
def observe_pass(jobs: Sequence[dict[str, Any]] | None, duration: float) -> None:
    """An evaluation pass ended: ``jobs`` are the fires left in its result, None when it failed."""
    if prometheus_client is None:
        return
    PASS_DURATION.observe(duration)
    PASSES.labels("error" if jobs is None else "ok").inc()
    if jobs is None:
        return
    # Jobs left in the result (a pass run without on_fired); the leader counts
    # each committed batch through observe_fires as it goes.
    observe_fires(jobs)


def observe_fires(jobs: Sequence[dict[str, Any]]) -> None:
    """These fires committed: count them by schedule and record their lateness."""
    if prometheus_client is None:
        return
    for job in jobs:
        meta = job.get("metadata") or {}
        FIRES.labels(label(meta.get(contract.CRON_NAME_KEY, ""))).inc()
        created, fire_at = job.get("created_at"), meta.get(contract.CRON_FIRE_AT_KEY)
        if isinstance(created, datetime) and isinstance(fire_at, str):
            FIRE_LATENESS.observe(max(0.0, (created - datetime.fromisoformat(fire_at)).total_seconds()))


def observe_claimed(rows: Sequence[dict[str, Any]]) -> None:
    """The worker claimed these attempts."""
    if prometheus_client is None or not rows:
        return
    per_queue: dict[str, int] = {}
    for row in rows:
        queue = label(row.get("queue", ""))
        per_queue[queue] = per_queue.get(queue, 0) + 1
    for queue, count in per_queue.items():
        _child(CLAIMED, queue).inc(count)


def observe_finished(row: dict[str, Any], outcome: str) -> None:
    """The worker recorded an attempt's outcome (completed, retryable, failed, released)."""
    if prometheus_client is not None:
        _child(FINISHED, label(row.get("queue", "")), label(outcome)).inc()


# The labelled children of the worker's per-job counters: ``labels()`` once
# per label values, not once per job.
_CHILDREN: dict[tuple[Any, ...], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    key = (id(metric), *labels)
    child = _CHILDREN.get(key)
    if child is None or child[0] is not metric:
        child = _CHILDREN[key] = (metric, metric.labels(*labels))
    return child[1]


def observe_rescued(state: str) -> None:
    """The worker's rescue sweep returned a stale attempt to ``state``."""
    if prometheus_client is not None:
        RESCUED.labels(label(state)).inc()


# -- serving -------------------------------------------------------------------
class Exporter:
    """A running exporter: its HTTP server and the gauges its scrapes share."""

    def __init__(self, server: Any, shared: SharedGauges) -> None:
        self.server = server
        self.shared = shared

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def shutdown(self) -> None:
        """Stop serving and close the gauges' connection."""
        self.server.shutdown()
        self.server.server_close()
        self.shared.close()


def start_exporter(port: int, addr: str = DEFAULT_HOST, using: str = "default") -> Exporter:
    """Serve this process's metrics over HTTP on ``addr:port`` in a daemon thread.

    The counters are those of :data:`REGISTRY`; the database gauges are read
    through ``using`` by one :class:`SharedGauges` for every scrape. Raises
    RuntimeError without the optional extra, OSError when the port cannot be
    bound.
    """
    if prometheus_client is None:
        raise RuntimeError(MISSING)
    shared = SharedGauges(using)
    server, _thread = prometheus_client.start_http_server(port, addr=addr, registry=exporter_registry(shared))
    logger.info("metrics served on %s:%s", addr, port, extra={"event": "metrics.serving", "port": port})
    return Exporter(server, shared)


def metrics_view(request: HttpRequest) -> HttpResponse:
    """A Django view serving :data:`REGISTRY` (add it to your URLconf, protected)."""
    from django.http import HttpResponse

    if prometheus_client is None:
        return HttpResponse(MISSING, status=501, content_type="text/plain")
    body = prometheus_client.generate_latest(REGISTRY)
    return HttpResponse(body, content_type=prometheus_client.CONTENT_TYPE_LATEST)


def port_number(value: str) -> int:
    """argparse type: a TCP port 1-65535."""
    import argparse

    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError("a port is 1-65535")
    return number


def add_arguments(parser: Any) -> None:
    """``--metrics-port``/``--metrics-host`` for ``runcron`` and ``runtasks``."""
    parser.add_argument(
        "--metrics-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on this port (needs awa-django[metrics])",
    )
    parser.add_argument(
        "--metrics-host",
        default=DEFAULT_HOST,
        metavar="ADDR",
        help=f"address for --metrics-port (default {DEFAULT_HOST}: this host only)",
    )


def serve_from_options(options: dict[str, Any]) -> Any:
    """Start the exporter if ``--metrics-port`` was given; CommandError otherwise fails."""
    from django.core.management.base import CommandError

    port = options.get("metrics_port")
    if port is None:
        return None
    try:
        return start_exporter(port, options.get("metrics_host") or DEFAULT_HOST)
    except RuntimeError as exc:
        raise CommandError(str(exc)) from exc
    except OSError as exc:
        raise CommandError(f"cannot serve metrics on port {port}: {exc}") from exc
