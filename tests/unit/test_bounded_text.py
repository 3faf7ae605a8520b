"""awa_django.bounded_text and its users: a failed attempt's stored traceback
and every log field are cut to AWA_ERROR_MAX_CHARS around a marker saying how
much was cut, whatever the exception (a 10 MB message, a 5,000-deep chain)."""

from __future__ import annotations

import io
import json
import logging
import sys

from django.test import override_settings

from awa_django import bounded_text, logs
from awa_django.jsonlog import JsonFormatter
from awa_django.worker.outcomes import error_entry

TEN_MB = 10 * 1024 * 1024


def huge_error() -> ValueError:
    try:
        raise ValueError("x" * TEN_MB + " END-OF-HUGE-MESSAGE")
    except ValueError as exc:
        return exc


def deep_chain(depth: int = 5000) -> ValueError:
    error: BaseException = KeyError("chain-start")
    for level in range(1, depth):
        try:
            raise RuntimeError(f"level {level}") from error
        except RuntimeError as raised:
            error = raised
    try:
        raise ValueError("END-OF-DEEP-CHAIN") from error
    except ValueError as exc:
        return exc


def test_cut__keeps_short_text_whole() -> None:
    assert bounded_text.cut("short", 10) == "short"
    assert bounded_text.cut("x" * 10, 10) == "x" * 10


def test_cut__keeps_the_start_and_the_end_around_a_marker_counting_the_cut() -> None:
    text = "HEAD" + "x" * 1000 + "TAIL"
    cut = bounded_text.cut(text, 100)
    assert cut.startswith("HEAD") and cut.endswith("TAIL")
    assert "[... 908 characters cut (AWA_ERROR_MAX_CHARS) ...]" in cut
    assert len(cut) == 100 + len(bounded_text.marker(908))


def test_cut_chunks__equals_cut_of_the_joined_text() -> None:
    chunks = ["ab" * 7, "c" * 50, "", "d" * 3, "e" * 200, "END"]
    for limit in (1, 10, 60, 100, 270, 300):
        assert bounded_text.cut_chunks(iter(chunks), limit) == bounded_text.cut("".join(chunks), limit), limit


def test_max_chars__the_setting_at_most_an_eighth_of_the_args_limit() -> None:
    with override_settings(AWA_ERROR_MAX_CHARS=5000, AWA_MAX_ARGS_BYTES=1024 * 1024):
        assert bounded_text.max_chars() == 5000
    with override_settings(AWA_ERROR_MAX_CHARS=5000, AWA_MAX_ARGS_BYTES=8000):
        assert bounded_text.max_chars() == 1000
    with override_settings(AWA_ERROR_MAX_CHARS="many"):
        assert bounded_text.max_chars() == 20_000


def test_error_entry__a_10_mb_message_is_cut_and_its_end_kept() -> None:
    with override_settings(AWA_ERROR_MAX_CHARS=20_000):
        entry = error_entry(huge_error(), 1, "w")
    text = entry["traceback"]
    assert len(text) < 20_000 + 100
    assert text.startswith("Traceback (most recent call last):")
    assert text.rstrip().endswith("END-OF-HUGE-MESSAGE")
    assert "characters cut (AWA_ERROR_MAX_CHARS)" in text
    assert entry["exception_class_path"] == "builtins.ValueError"


def test_error_entry__a_5000_deep_chain_is_cut_and_its_last_exception_kept() -> None:
    with override_settings(AWA_ERROR_MAX_CHARS=20_000):
        entry = error_entry(deep_chain(), 2, "w")
    text = entry["traceback"]
    assert len(text) < 20_000 + 100
    assert "KeyError: 'chain-start'" in text  # the first of the chain is printed first
    assert text.rstrip().endswith("ValueError: END-OF-DEEP-CHAIN")
    assert "characters cut (AWA_ERROR_MAX_CHARS)" in text


def test_filter__cuts_each_argument_extra_and_the_traceback() -> None:
    exc = huge_error()
    made = logging.LogRecord(
        "awa_django.worker",
        logging.ERROR,
        __file__,
        1,
        "job %s failed: %s",
        (7, "y" * TEN_MB),
        (ValueError, exc, exc.__traceback__),
    )
    made.__dict__["detail"] = "z" * TEN_MB
    with override_settings(AWA_ERROR_MAX_CHARS=1000):
        logs.EscapingFilter().filter(made)
    assert len(made.getMessage()) < 1200
    assert len(made.__dict__["detail"]) < 1100
    assert made.exc_text is not None and len(made.exc_text) < 1200
    assert made.exc_text.endswith("END-OF-HUGE-MESSAGE")
    line = logging.Formatter("%(message)s").format(made)
    assert len(line) < 2500


def test_json_formatter__a_record_of_any_logger_is_one_bounded_line() -> None:
    exc = deep_chain()
    made = logging.LogRecord(
        "django.tasks",
        logging.ERROR,
        __file__,
        1,
        "%s",
        ("m" * TEN_MB,),
        (ValueError, exc, exc.__traceback__),
    )
    made.__dict__["extra_field"] = "e" * TEN_MB
    with override_settings(AWA_ERROR_MAX_CHARS=1000):
        line = JsonFormatter().format(made)
    assert "\n" not in line and len(line) < 5000
    data = json.loads(line)
    assert data["exception"].endswith("ValueError: END-OF-DEEP-CHAIN")
    assert "characters cut (AWA_ERROR_MAX_CHARS)" in data["message"]


def test_worker_log__a_failure_line_is_bounded_through_a_real_handler() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("awa_django.worker")
    logs.install()
    logger.addHandler(handler)
    try:
        with override_settings(AWA_ERROR_MAX_CHARS=1000):
            exc = huge_error()
            logger.error("job %s failed: %s", 1, str(exc), exc_info=(type(exc), exc, exc.__traceback__))
    finally:
        logger.removeHandler(handler)
    assert 0 < len(stream.getvalue()) < 3000
    assert sys.getsizeof(stream.getvalue()) < 10_000


def test_install__django_tasks_records_of_a_failed_task_are_bounded() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("django.tasks")
    logs.install()
    logger.addHandler(handler)
    try:
        with override_settings(AWA_ERROR_MAX_CHARS=1000):
            exc = deep_chain()
            logger.error(
                "Task id=%s state=%s: %s",
                1,
                "FAILED",
                "m" * TEN_MB,
                exc_info=(type(exc), exc, exc.__traceback__),
            )
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert 0 < len(text) < 3000
    assert text.rstrip().endswith("ValueError: END-OF-DEEP-CHAIN")
