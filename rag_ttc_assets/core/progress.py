"""The one reporting interface long stages call (embedding, answers, the judges), and its text.

A stage opens a task with the count it will work through and advances it as items finish; what is shown, where
and how often is the reporter's business (the CLI's stderr reporter, a Dagster step's log), so library code
holds no terminal logic. `NO_PROGRESS`, the default, reports nothing. Pure: no I/O, no clock of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Task:
    """One counted piece of work; this base reports nothing. Safe to advance from worker threads."""

    def advance(self, n: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass

    def __enter__(self) -> Task:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


class ThrottledTask(Task):
    """A task that counts from worker threads and reports at most every `every_s()` seconds of the given clock.
    Subclasses say whether a report is due (`due`) and make it (`report`), outside the lock."""

    def __init__(self, doing: str, total: int, unit: str, clock: Callable[[], float]):
        self.doing, self.total, self.unit, self.clock = doing, total, unit, clock
        self.done = 0
        self.started = self.last = clock()
        self._lock = threading.Lock()

    def every_s(self) -> float:
        raise NotImplementedError

    def due(self) -> bool:
        return True

    def report(self, now: float) -> None:
        raise NotImplementedError

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            now = self.clock()
            if now - self.last < self.every_s() or not self.due():
                return
            self.last = now
        self.report(now)


class Progress:
    """Where a stage reports its tasks; this base (NO_PROGRESS) reports nothing.

    `doing` names the work while it runs ("embedding"), `done` once it is over ("embedded"); `unit` is plural
    ("chunks"). Use as `with progress.task("embedding", "embedded", len(texts), "chunks") as t: ... t.advance(k)`.
    """

    def task(self, doing: str, done: str, total: int, unit: str) -> Task:
        return Task()


NO_PROGRESS = Progress()


def count_text(n: int) -> str:
    return f"{n:,}"


def rate_text(done: int, seconds: float, unit: str) -> str:
    """Items per second; two decimals below one a second (slow provider calls), one above."""
    if seconds <= 0 or done <= 0:
        return f"- {unit}/s"
    rate = done / seconds
    return f"{rate:,.2f} {unit}/s" if rate < 1 else f"{rate:,.1f} {unit}/s"


def eta_seconds(done: int, total: int, seconds: float) -> float | None:
    """Time left at the rate so far; None before the first item (no rate yet)."""
    if done <= 0 or seconds <= 0:
        return None
    return max(total - done, 0) * seconds / done


def clock_text(seconds: float | None) -> str:
    """m:ss, or h:mm:ss from an hour; "?" when unknown."""
    if seconds is None:
        return "?"
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def duration_text(seconds: float) -> str:
    """A step's time: "0.4 s", "41.2 s", "10 min 03 s", "2 h 05 min"."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    s = int(round(seconds))
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def progress_text(doing: str, done: int, total: int, unit: str, seconds: float) -> str:
    """"embedding 1,024/2,130 chunks (48%), 52.1 chunks/s, ETA 0:21"."""
    pct = f" ({100 * done // total}%)" if total else ""
    return (f"{doing} {count_text(done)}/{count_text(total)} {unit}{pct}, {rate_text(done, seconds, unit)}, "
            f"ETA {clock_text(eta_seconds(done, total, seconds))}")


def bar_text(done: int, total: int, width: int = 12) -> str:
    """"[#####-------]": ASCII, so any terminal encoding draws it."""
    filled = width if not total else min(width, width * done // total)
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def live_text(done: int, total: int, unit: str, seconds: float) -> str:
    """"[######------] 1,024/2,130 chunks  ETA 0:21  52.1 chunks/s": a live bar's text, the ETA before the rate
    so a narrow terminal, which cuts the line, keeps it."""
    return (f"{bar_text(done, total)} {count_text(done)}/{count_text(total)} {unit}  "
            f"ETA {clock_text(eta_seconds(done, total, seconds))}  {rate_text(done, seconds, unit)}")


def done_text(done_word: str, n: int, unit: str) -> str:
    """"embedded 2,130 chunks": what a finished task adds to its step's line."""
    return f"{done_word} {count_text(n)} {unit}"
