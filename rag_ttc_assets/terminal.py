"""What `rag-ttc run` writes to stderr while it works: one line per step as it finishes, with its time, and the
progress of long stages (embedding, answers, the judges) with rate and ETA.

A live bar is drawn only when the stream is a terminal; into a pipe or a CI log a progress line is written at
most every `every_s` seconds, so those stay readable. stdout is never touched (`--json` stays pure JSON).
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rag_ttc_assets.core.progress import Progress, Task, ThrottledTask, done_text, duration_text, live_text, progress_text

LINE_EVERY_S = 5.0  # without a terminal: a progress line at most this often
REDRAW_EVERY_S = 0.1  # with one: the live bar at most this often


class Terminal(Progress):
    """The CLI's reporter: stages' tasks (Progress) and Dagster's step events (through `StepEvents`)."""

    def __init__(self, stream=None, live: bool | None = None, every_s: float = LINE_EVERY_S,
                 clock=time.monotonic, arm_width: int = 0, step_width: int = 0):
        self.stream = stream if stream is not None else sys.stderr
        self.live = _isatty(self.stream) if live is None else live
        self.every_s = every_s
        self.clock = clock
        self.arm_width, self.step_width = arm_width, step_width
        self._lock = threading.Lock()
        self._where = self._here = ""  # "arm  step" of the step running: padded (lines), compact (live bar)
        self._notes: list[str] = []  # what the running step's finished tasks did
        self._shown = False  # a live line is on screen

    def task(self, doing: str, done: str, total: int, unit: str) -> Task:
        return _TerminalTask(self, doing, done, total, unit)

    def _prefix(self, arm: str, step: str) -> str:
        return f"{arm:<{self.arm_width}}  {step:<{self.step_width}}"

    def step_started(self, arm: str, step: str) -> None:
        with self._lock:
            self._where, self._here, self._notes = self._prefix(arm, step), f"{arm}  {step}", []
            if self.live:
                self._draw(f"{self._here}  ...")

    def step_finished(self, arm: str, step: str, seconds: float, notes: list[str] = ()) -> None:
        """"baseline  vector_index  41.2 s  (embedded 2,130 chunks)": the step's line, once it is over."""
        with self._lock:
            said = [*self._notes, *notes]
            self._notes = []
            self._write_line(f"{self._prefix(arm, step)}  {duration_text(seconds):>6}"
                             + (f"  ({'; '.join(said)})" if said else ""))

    def note(self, arm: str, step: str, text: str) -> None:
        """A line about a step still running ("waiting for a free slot ...")."""
        with self._lock:
            self._write_line(f"{self._prefix(arm, step)}  {text}")

    def _write_line(self, text: str) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self._shown = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def _draw(self, text: str) -> None:
        # Cut to the terminal's width: a wrapped line cannot be redrawn in place with \r.
        width = shutil.get_terminal_size((100, 24)).columns - 1
        self.stream.write("\r" + text[:width] + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def _report(self, t: _TerminalTask, now: float) -> None:
        with self._lock:
            if self.live:
                self._draw(f"{self._here}  {live_text(t.done, t.total, t.unit, now - t.started)}")
            else:
                self._write_line(f"{self._where}  {progress_text(t.doing, t.done, t.total, t.unit, now - t.started)}")

    def _finished(self, t: _TerminalTask) -> None:
        with self._lock:
            self._notes.append(done_text(t.done_word, t.done, t.unit))


class _TerminalTask(ThrottledTask):
    def __init__(self, owner: Terminal, doing: str, done_word: str, total: int, unit: str):
        super().__init__(doing, total, unit, owner.clock)
        self.owner, self.done_word = owner, done_word

    def every_s(self) -> float:
        return REDRAW_EVERY_S if self.owner.live else self.owner.every_s

    def due(self) -> bool:
        return self.owner.live or self.done < self.total  # piped: the step's line, next, says it in full

    def report(self, now: float) -> None:
        self.owner._report(self, now)

    def finish(self) -> None:
        self.owner._finished(self)


@contextmanager
def direct_stream(stream) -> Iterator:
    """A text stream onto the file `stream` writes to now (a duplicate of its descriptor), unmoved when its descriptor
    is later pointed elsewhere. Dagster's compute-log capture points fd 2 at a log file while a run's steps execute and
    mirrors that file back with a `tail -F` it kills when the run ends (dagster-io/dagster#23336): a line written in
    the run's last moment, the last step's, could never reach the terminal. A stream without a descriptor (a test's
    StringIO) is `stream` itself."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        yield stream
        return
    stream.flush()
    own = os.fdopen(os.dup(fd), "w", buffering=1, encoding=getattr(stream, "encoding", None) or "utf-8",
                    errors=getattr(stream, "errors", None) or "backslashreplace")
    try:
        yield own
    finally:
        try:
            own.close()
        except BrokenPipeError:  # the reader left; rag-ttc's own handler reports it (exit 141)
            pass


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class StepEvents:
    """An instance event listener (DagsterInstance.add_event_listener) for one arm's run: step starts, check
    results and step ends, told to the terminal. Event types are compared by name (DagsterEventType values)."""

    def __init__(self, terminal: Terminal, arm: str, failed: str = "FAILED"):
        self.terminal, self.arm, self.failed = terminal, arm, failed
        self.started: dict[str, float] = {}
        self.checks: dict[str, tuple[str, str, bool]] = {}  # step key -> (check, asset, passed)

    def __call__(self, entry) -> None:
        ev = entry.dagster_event
        if ev is None or ev.step_key is None:
            return
        kind, key = ev.event_type_value, ev.step_key
        if kind == "STEP_START":
            self.started[key] = entry.timestamp
            self.terminal.step_started(self.arm, self._name(key))
        elif kind == "ASSET_CHECK_EVALUATION":
            data = ev.event_specific_data
            self.checks[key] = (data.check_name, data.asset_key.to_user_string(), bool(data.passed))
        elif kind == "STEP_SUCCESS":
            seconds = ev.event_specific_data.duration_ms / 1000
            notes = []
            if key in self.checks:
                _, asset, passed = self.checks[key]
                notes.append(f"check of {asset}: {'passed' if passed else 'FAILED'}")
            self.terminal.step_finished(self.arm, self._name(key), seconds, notes)
        elif kind == "STEP_FAILURE":
            seconds = entry.timestamp - self.started.get(key, entry.timestamp)
            self.terminal.step_finished(self.arm, self._name(key), seconds, [self.failed])
        elif kind == "ENGINE_EVENT" and "pool" in (getattr(ev.event_specific_data, "metadata", None) or {}):
            # Dagster's step_concurrency_blocked: the step waits, maybe long, for its pool's slot (another run's).
            pool = ev.event_specific_data.metadata["pool"]
            self.terminal.note(self.arm, self._name(key), f"waiting for a free slot of pool "
                                                          f"{getattr(pool, 'value', pool)!r} (held by another run)")
        elif kind == "STEP_SKIPPED":
            self.terminal.step_finished(self.arm, self._name(key), 0.0, ["skipped: an upstream step failed"])

    def _name(self, key: str) -> str:
        # A check's step key is "<asset>_<check>"; its line names the check (the asset is in its note).
        return self.checks[key][0] if key in self.checks else key
