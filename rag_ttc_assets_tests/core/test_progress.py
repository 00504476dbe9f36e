"""The progress text: counts, rates, ETAs and durations, against values worked out by hand."""

from rag_ttc_assets.core.progress import (NO_PROGRESS, bar_text, clock_text, done_text, duration_text, eta_seconds,
                                          live_text, progress_text, rate_text)


def test_rate_has_one_decimal_from_one_a_second_and_two_below():
    assert rate_text(1024, 19.6, "chunks") == "52.2 chunks/s"  # 1024 / 19.6 = 52.24
    assert rate_text(3, 10.0, "questions") == "0.30 questions/s"
    assert rate_text(12_345, 2.0, "chunks") == "6,172.5 chunks/s"
    assert rate_text(0, 5.0, "chunks") == "- chunks/s"  # nothing done yet: no rate, not 0


def test_eta_is_the_rest_at_the_rate_so_far():
    assert eta_seconds(1024, 2130, 19.6) == 1106 * 19.6 / 1024  # 21.17 s
    assert eta_seconds(0, 2130, 3.0) is None
    assert eta_seconds(5, 5, 3.0) == 0.0


def test_clock_and_duration_texts():
    assert clock_text(21.17) == "0:21"
    assert clock_text(3725) == "1:02:05"
    assert clock_text(None) == "?"
    assert duration_text(0.44) == "0.4 s"
    assert duration_text(41.23) == "41.2 s"
    assert duration_text(603.4) == "10 min 03 s"
    assert duration_text(7500) == "2 h 05 min"


def test_progress_line_bar_and_summary():
    assert progress_text("embedding", 1024, 2130, "chunks", 19.6) == \
        "embedding 1,024/2,130 chunks (48%), 52.2 chunks/s, ETA 0:21"
    assert bar_text(6, 12) == "[######------]"
    assert bar_text(1, 3) == "[####--------]"
    assert live_text(1024, 2130, "chunks", 19.6) == "[#####-------] 1,024/2,130 chunks  ETA 0:21  52.2 chunks/s"
    assert done_text("embedded", 2130, "chunks") == "embedded 2,130 chunks"


def test_the_default_reports_nothing_and_counts_nothing():
    with NO_PROGRESS.task("embedding", "embedded", 10, "chunks") as t:
        t.advance(3)
    assert type(t).__name__ == "Task"
