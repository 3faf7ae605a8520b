"""Docs that run: the runnable blocks of a Markdown page, run in a fresh project.

A block is runnable when the line just before its opening fence is an HTML
comment (invisible once rendered):

- ``<!-- run -->`` before a ```` ```console ```` block: each ``$ `` line is a
  command, run from the project directory; the lines after it, up to the next
  ``$ ``, are what it prints (stdout and stderr together). A line ``...``
  stands for any number of lines.
- ``<!-- run: until-shown -->``: a long-running command (``runcron``,
  ``runtasks``) runs until it has printed what the block shows, then gets
  Ctrl-C (SIGINT), as the reader stops it.
- ``<!-- run: no-output -->``: the commands run and must succeed; what they
  print is not compared.
- ``<!-- run: stdout -->``: only stdout is compared (a how-to shows what a
  command answers, not the log records its reader's ``LOGGING`` may add on
  stderr).
- ``<!-- run: file -->`` before a code block whose first line is ``# PATH``:
  the block is written to ``PATH`` in the project, appended when the file
  exists (``settings.py``), created otherwise.
- ``<!-- run: setup`` opening a multi-line HTML comment closed by ``-->``:
  its ``$ `` lines run (and must succeed) at that point of the page, hidden
  from the reader; they create the state the page's blocks assume (a schedule
  the page names, jobs to cancel).

A shell block (```` ```console ````, ``shell``, ``bash``, ``sh``) that is not
marked runnable must say why on the line before its fence, as
``<!-- not run: REASON -->`` (a long-running process, systemd, an install);
:func:`unmarked_blocks` lists those that say neither.

Outputs are compared after :func:`mask`: times, durations, ids, process ids,
worker ids and the ``cli:USER`` actor are replaced by placeholders, and runs of
spaces count as one.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.waiting import wait_for

MARKER = re.compile(r"^\s*<!-- run(?::\s*(?P<option>[\w-]+))? -->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[\w-]*)\s*$")
OPTIONS = {"", "until-shown", "no-output", "stdout", "file"}
SETUP = re.compile(r"^\s*<!-- run: setup\s*$")
NOT_RUN = re.compile(r"^\s*<!-- not run: (?P<reason>\S.*?) -->\s*$")
SHELL = {"console", "shell", "bash", "sh"}

# Masks, in order: what differs from one run to the next.
MASKS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:[+-]\d\d:\d\d|Z| UTC)?"), "<time>"),
    (re.compile(r"\b[\w.-]+:\d+:[0-9a-f]{8}\b"), "<worker>"),
    (re.compile(r"\b(job|jobs|pid|id=)\s?\d+"), r"\1 <n>"),
    (re.compile(r"'id': \d+"), "'id': <n>"),
    (re.compile(r"\bcli:\S+"), "cli:<user>"),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ms|s)\b"), "<duration>"),
    (re.compile(r"^\s*\d+(\s|$)"), r"<n>\1"),
]


def mask(text: str) -> list[str]:
    """The lines of ``text`` with times and ids masked and spaces collapsed."""
    lines = []
    for line in text.splitlines():
        for pattern, replacement in MASKS:
            line = pattern.sub(replacement, line)
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return lines


def matches(expected: list[str], actual: list[str], *, prefix: bool = False) -> bool:
    """``actual`` is what ``expected`` shows (``...`` matches any lines);
    with ``prefix``, anything may follow."""
    if prefix:
        expected = [*expected, "..."]
    # Glob matching over lines, by dynamic programming on (expected, actual) positions.
    reach = {0}
    for line in expected:
        if line == "...":
            reach = set(range(min(reach), len(actual) + 1)) if reach else set()
        else:
            reach = {i + 1 for i in reach if i < len(actual) and actual[i] == line}
    return len(actual) in reach


@dataclass
class Command:
    """One ``$ `` line of a console block and the output shown under it."""

    line: str
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    """One runnable block of a page."""

    page: Path
    lineno: int
    option: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.lineno}"

    def commands(self) -> list[Command]:
        commands: list[Command] = []
        for line in self.text.splitlines():
            if line.startswith("$ "):
                commands.append(Command(line[2:].strip()))
            elif commands:
                commands[-1].shown.append(line)
        return commands


def setup_block(page: Path, lines: list[str], i: int) -> Block:
    """The hidden ``<!-- run: setup ... -->`` comment opening at line ``i``."""
    body = []
    for j in range(i + 1, len(lines)):
        if lines[j].strip() == "-->":
            return Block(page, i + 1, "setup", "\n".join(body) + "\n")
        body.append(lines[j].strip())
    raise ValueError(f"{page.name}:{i + 1}: a setup comment is closed by a line '-->'")


def runnable_blocks(page: Path) -> list[Block]:
    """The blocks of ``page`` marked runnable (setup comments included), in order."""
    lines = page.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if SETUP.match(line):
            blocks.append(setup_block(page, lines, i))
            continue
        marker = MARKER.match(line)
        if marker is None:
            continue
        option = marker.group("option") or ""
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if option not in OPTIONS or fence is None:
            raise ValueError(
                f"{page.name}:{i + 1}: a run marker must name a known option and precede a fence"
            )
        indent = fence.group("indent")
        body = []
        for j in range(i + 2, len(lines)):
            if lines[j].strip() == "```":
                break
            body.append(lines[j].removeprefix(indent))
        blocks.append(Block(page, i + 2, option, "\n".join(body) + "\n"))
    return blocks


def unmarked_blocks(page: Path) -> list[str]:
    """Where ``page`` has a shell block marked neither runnable nor ``not run: REASON``;
    also a ``not run`` marker that precedes no fence."""
    lines = page.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        fence = FENCE.match(line)
        before = lines[i - 1] if i else ""
        if fence and fence.group("info") in SHELL and not (MARKER.match(before) or NOT_RUN.match(before)):
            found.append(
                f"{page.name}:{i + 1}: a {fence.group('info')} block is neither run nor 'not run: REASON'"
            )
        after = lines[i + 1] if i + 1 < len(lines) else ""
        if NOT_RUN.match(line) and not FENCE.match(after):
            found.append(f"{page.name}:{i + 1}: a 'not run' marker precedes no fence")
    return found


class Project:
    """A fresh Django project in ``root`` whose commands run as a reader's shell runs them."""

    def __init__(
        self, root: Path, settings_tail: str = "", replacements: dict[str, str] | None = None
    ) -> None:
        """``settings_tail`` is appended after each block written to a ``settings.py``
        (the test's database); ``replacements`` replace placeholders of file blocks."""
        self.root = root
        self.settings_tail = settings_tail
        self.replacements = replacements or {}
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        # `python` and `django-admin` are this interpreter's, as in an activated virtualenv.
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env.get('PATH', '')}"

    def write(self, block: Block) -> None:
        first, _, rest = block.text.partition("\n")
        if not first.startswith("# "):
            raise ValueError(f"{block.where}: a file block starts with '# PATH'")
        path = self.root / first[2:].strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        exists = path.exists()
        text = block.text
        for placeholder, value in self.replacements.items():
            text = text.replace(placeholder, value)
        with path.open("a" if exists else "w") as handle:
            handle.write(("\n" if exists else "") + text)
            if path.name == "settings.py":
                handle.write(self.settings_tail)

    def run(self, command: str, timeout: float = 120, *, stderr: bool = True) -> tuple[int, str]:
        """Run ``command`` to completion; (exit status, stdout and, if ``stderr``, stderr together)."""
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.root,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if stderr else subprocess.DEVNULL,
            text=True,
            timeout=timeout,
        )
        return done.returncode, done.stdout

    def run_until(self, command: str, shown: Callable[[str], bool], timeout: float = 60) -> tuple[int, str]:
        """Start ``command``, wait until ``shown(output)`` holds, then stop it with SIGINT."""
        log = self.root / f".run-{time.monotonic_ns()}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=self.root,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            try:
                # Never shown: stopped all the same, and the difference reported.
                with contextlib.suppress(AssertionError):
                    wait_for(
                        lambda: shown(log.read_text(errors="replace")) or proc.poll() is not None, timeout
                    )
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                status = proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        return status, log.read_text(errors="replace")


def run_block(project: Project, block: Block) -> Iterator[str]:
    """Run one block; yield a message for each difference from the page."""
    if block.option == "file":
        project.write(block)
        return
    for command in block.commands():
        expected = mask("\n".join(command.shown))
        if block.option == "until-shown":
            status, output = project.run_until(
                command.line, lambda text, expected=expected: matches(expected, mask(text), prefix=True)
            )
            ok = matches(expected, mask(output), prefix=True)
        else:
            status, output = project.run(command.line, stderr=block.option != "stdout")
            if status != 0:
                yield f"{block.where}: `{command.line}` exited with {status}:\n{output}"
                continue
            ok = block.option in ("no-output", "setup") or matches(expected, mask(output))
        if not ok:
            shown = "\n".join(expected)
            got = "\n".join(mask(output))
            yield f"{block.where}: `{command.line}` printed\n{got}\n--- the page shows\n{shown}"
