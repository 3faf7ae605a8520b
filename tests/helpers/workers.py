"""A :class:`~awa_django.worker.loop.Worker` run in a thread of the test process."""

from __future__ import annotations

import threading

from django.db import connections

from awa_django.worker.loop import Worker


def start_in_thread(worker: Worker) -> threading.Thread:
    """Start ``worker.run()`` in a thread that closes its connections when it ends."""

    def run() -> None:
        try:
            worker.run()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread
