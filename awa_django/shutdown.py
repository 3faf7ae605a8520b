"""Two-stage shutdown shared by ``runcron`` and ``runtasks``.

The first SIGTERM/SIGINT asks the loop to stop gracefully (finish the pass,
drain running tasks); a second one exits the process at once with status 1.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from types import FrameType

logger = logging.getLogger(__name__)


def install_two_stage_shutdown(stop: Callable[[], None], role: str, graceful: str) -> None:
    """Route SIGTERM and SIGINT: first -> ``stop()``, second -> ``os._exit(1)``.

    ``role`` names the log events (``<role>.stopping``/``<role>.killed``);
    ``graceful`` says what the first signal lets finish.
    """
    received = 0

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        received += 1
        if received > 1:
            logger.warning("second signal: exiting now", extra={"event": f"{role}.killed"})
            os._exit(1)
        logger.info("signal %s: %s", signum, graceful, extra={"event": f"{role}.stopping"})
        stop()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)
