"""Prometheus metrics: what web processes measure, and what durable state says at scrape time.

Two kinds of numbers, so that ``GET /metrics`` is right however many processes serve it:

- **Web-process measurements** (chat time to first event and to done, search latency, rate-limit
  refusals, open websockets) are prometheus_client instruments. Under ``gnosi serve`` every web
  process writes them to files in ``PROMETHEUS_MULTIPROC_DIR`` (app/serve.py makes a fresh one per
  start) and any of them sums all (prometheus_client's multiprocess mode); without that variable
  (tests, ``flask run``) they stay in this process.
- **Durable state** (jobs by state, messages waiting per queue, ingestion step durations) is read
  when scraped, from ``notebooks.sqlite3`` and the broker (``DurableCollector``): steps run on
  other hosts, some without the database, and record their durations there
  (storage.step_durations).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from celery import Celery
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from storage import step_durations
from storage.db import Database
from storage.models import Job

log = logging.getLogger(__name__)

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST
JOB_STATES = ("queued", "running", "cancelling", "cancelled", "succeeded", "failed")
# Chat and search answer in tens of milliseconds warm and seconds cold or with an LLM.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

WEB = CollectorRegistry(auto_describe=True)
CHAT_FIRST_EVENT = Histogram(
    "gnosi_chat_first_event_seconds",
    "From a chat turn's handler starting (its request read and routed) to its first event.",
    buckets=LATENCY_BUCKETS, registry=WEB,
)
CHAT_DONE = Histogram(
    "gnosi_chat_done_seconds", "From a chat turn's handler starting to its last event.",
    buckets=LATENCY_BUCKETS, registry=WEB,
)
SEARCH = Histogram(
    "gnosi_search_seconds", "One hybrid search of a revision, its own time (not the pauses it makes for waiting requests).",
    buckets=LATENCY_BUCKETS, registry=WEB,
)
RATE_LIMITED = Counter(
    "gnosi_rate_limited", "Requests refused with 429, by limited action.", ["action"], registry=WEB,
)
SOCKETS_OPEN = Gauge(
    "gnosi_websockets_open", "Chat websockets open now.", multiprocess_mode="livesum", registry=WEB,
)


class _ThisProcess(Collector):
    """The web instruments as this process holds them (no multiprocess directory)."""

    def collect(self) -> Iterator[Metric]:
        return iter(WEB.collect())


class DurableCollector(Collector):
    """Numbers that live in the database and the broker, read at each scrape."""

    def __init__(self, db: Database, celery: Celery, queues: tuple[str, ...]) -> None:
        self.db = db
        self.celery = celery
        self.queues = queues

    def describe(self) -> list[Metric]:
        return []  # nothing read at registration: only scrapes touch the database and the broker

    def collect(self) -> Iterator[Metric]:
        yield from self._database()
        yield from self._broker()

    def _database(self) -> Iterator[Metric]:
        with self.db.reader() as session:
            counts = {state: count for state, count in session.execute(select(Job.state, func.count()).group_by(Job.state))}
            histograms = step_durations.histograms(session)
        jobs = GaugeMetricFamily("gnosi_jobs", "Ingestion jobs by state.", labels=["state"])
        for state in JOB_STATES:
            jobs.add_metric([state], counts.get(state, 0))
        yield jobs
        steps = HistogramMetricFamily(
            "gnosi_ingest_step_seconds", "Durations of ingestion steps, wherever they ran.", labels=["step"]
        )
        for step, histogram in histograms.items():
            steps.add_metric([step], histogram.cumulative(), histogram.seconds)
        yield steps

    def _broker(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("gnosi_broker_up", "Whether the broker answered this scrape.")
        waiting = GaugeMetricFamily("gnosi_queue_messages", "Messages waiting in each queue.", labels=["queue"])
        try:
            with self.celery.connection_for_read() as connection:
                connection.ensure_connection(max_retries=1, interval_start=0, timeout=5)
                channel = connection.default_channel
                sizes = {queue: channel.queue_declare(queue=queue).message_count for queue in self.queues}
        except Exception as err:  # noqa: BLE001 (kombu and redis raise their own errors)
            log.warning("metrics: the broker did not answer: %s", err)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        for queue, size in sizes.items():
            waiting.add_metric([queue], size)
        yield up
        yield waiting


def exposition(durable: DurableCollector) -> bytes:
    """The text format of every metric: this instance's web processes' and the durable ones."""
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get(MULTIPROCESS_DIR):
        MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    registry.register(durable)
    return generate_latest(registry)
