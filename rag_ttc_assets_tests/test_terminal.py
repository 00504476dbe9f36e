"""The CLI's stderr reporter and the Dagster step log's, with a hand-driven clock."""

import io

from rag_ttc_assets.defs.progress_reporter import LogProgress
from rag_ttc_assets.terminal import Terminal


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_without_a_terminal_a_progress_line_at_most_every_few_seconds_then_the_step_line():
    out, clock = io.StringIO(), Clock()
    term = Terminal(out, live=False, every_s=5.0, clock=clock, arm_width=8, step_width=12)
    term.step_started("baseline", "vector_index")
    with term.task("embedding", "embedded", 2130, "chunks") as task:
        clock.t = 104.0
        task.advance(512)  # 4 s in: not yet
        clock.t = 119.6
        task.advance(512)  # 19.6 s: 1,024 done
        clock.t = 121.0
        task.advance(512)  # 1.4 s after the last line: not yet
        clock.t = 130.0
        task.advance(594)  # all done: the step line says it
    term.step_finished("baseline", "vector_index", 41.23)
    assert out.getvalue().splitlines() == [
        "baseline  vector_index  embedding 1,024/2,130 chunks (48%), 52.2 chunks/s, ETA 0:21",
        "baseline  vector_index  41.2 s  (embedded 2,130 chunks)",
    ]
    assert "\r" not in out.getvalue()


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_cleared_for_the_step_line():
    out, clock = io.StringIO(), Clock()
    term = Terminal(out, live=True, clock=clock, arm_width=8, step_width=7)
    term.step_started("baseline", "answers")
    with term.task("answering", "answered", 4, "questions") as task:
        clock.t = 110.0
        task.advance()
        clock.t = 110.05
        task.advance(3)  # within the redraw interval: not drawn
    term.step_finished("baseline", "answers", 12.0)
    assert out.getvalue() == ("\rbaseline  answers  ...\x1b[K"
                              "\rbaseline  answers  [###---------] 1/4 questions  ETA 0:30  0.10 questions/s\x1b[K"
                              "\r\x1b[Kbaseline  answers  12.0 s  (answered 4 questions)\n")


class Log:
    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(text)


def test_a_dagster_step_logs_progress_at_most_every_half_minute():
    log, clock = Log(), Clock()
    with LogProgress(log, clock=clock).task("judging", "judged", 120, "answers") as task:
        for t in (110.0, 131.0, 150.0, 170.0):
            clock.t = t
            task.advance(10)
    assert log.lines == ["judging 20/120 answers (16%), 0.65 answers/s, ETA 2:35",  # 31 s in; 100 * 31 / 20
                         "judging 40/120 answers (33%), 0.57 answers/s, ETA 2:20"]  # 70 s in; 80 * 70 / 40
