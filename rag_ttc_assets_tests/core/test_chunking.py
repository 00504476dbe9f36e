from __future__ import annotations

import pytest

from rag_ttc_assets.core.chunking import Chunk, chunk_corpus, chunk_text

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def spans(chunks: list[Chunk]) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]


def assert_consistent(text: str, chunks: list[Chunk], chunk_runes: int) -> None:
    """Every chunk is its own slice of the text, within size, and together they cover [0, len(text))."""
    covered: set[int] = set()
    for n, c in enumerate(chunks):
        assert text[c.start:c.end] == c.text
        assert c.runes == len(c.text) == c.end - c.start
        assert 0 < c.runes <= chunk_runes
        assert c.ordinal == n
        covered.update(range(c.start, c.end))
    assert covered == set(range(len(text)))
    if chunks:
        assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start <= a.end  # no gap, always progress


def test_empty_document_has_no_chunks() -> None:
    assert chunk_text("d", "", 10, 2) == []
    assert chunk_corpus([("d", ""), ("e", "")], 10, 2) == []


def test_document_shorter_than_a_chunk_is_one_chunk() -> None:
    assert chunk_text("doc", "hello world", 100, 10) == [
        Chunk(chunk_id="doc#chunk-0", doc_id="doc", ordinal=0, text="hello world", runes=11, start=0, end=11)
    ]


@pytest.mark.parametrize("overlap", [10, 11, 50])
def test_overlap_not_smaller_than_size_is_rejected(overlap: int) -> None:
    with pytest.raises(ValueError) as err:
        chunk_text("d", ALPHABET, 10, overlap)
    assert str(err.value) == f"overlap_runes ({overlap}) must be >= 0 and smaller than chunk_runes (10)"


def test_negative_overlap_is_rejected() -> None:
    with pytest.raises(ValueError) as err:
        chunk_text("d", ALPHABET, 10, -1)
    assert str(err.value) == "overlap_runes (-1) must be >= 0 and smaller than chunk_runes (10)"


@pytest.mark.parametrize("size", [0, -3])
def test_non_positive_size_is_rejected(size: int) -> None:
    with pytest.raises(ValueError) as err:
        chunk_text("d", ALPHABET, size, 0)
    assert str(err.value) == f"chunk_runes must be positive, got {size}"


def test_validation_happens_even_for_empty_text() -> None:
    with pytest.raises(ValueError):
        chunk_text("d", "", 10, 10)


def test_multibyte_runes_are_code_points() -> None:
    unit = "a\u00e9\u65e5\u672c\u8a9e\U0001f642"  # a, é, 日, 本, 語, 🙂: 6 code points, 1+2+3+3+3+4 = 16 bytes
    assert (len(unit), len(unit.encode("utf-8"))) == (6, 16)
    text = unit * 5  # 30 runes, no whitespace, so no snap
    chunks = chunk_text("ja", text, 10, 3)
    assert spans(chunks) == [(0, 10), (7, 17), (14, 24), (21, 30)]
    assert [c.runes for c in chunks] == [10, 10, 10, 9]
    assert chunks[0].text == "a\u00e9\u65e5\u672c\u8a9e\U0001f642a\u00e9\u65e5\u672c"
    assert chunks[1].text == "\u00e9\u65e5\u672c\u8a9e\U0001f642a\u00e9\u65e5\u672c\u8a9e"
    assert chunks[3].text == "\u672c\u8a9e\U0001f642a\u00e9\u65e5\u672c\u8a9e\U0001f642"
    assert [len(c.text.encode("utf-8")) for c in chunks] == [25, 27, 29, 26]
    assert_consistent(text, chunks, 10)


def test_multibyte_snap_counts_runes() -> None:
    # 8 CJK runes, a space at rune 8 (byte 24), then 4 more runes: len 13 runes, 37 bytes.
    text = "\u65e5\u672c\u8a9e\u65e5\u672c\u8a9e\u65e5\u672c \u8a9e\u65e5\u672c\u8a9e"
    assert (len(text), len(text.encode("utf-8"))) == (13, 37)
    chunks = chunk_text("ja", text, 10, 2)
    # window [0,10): floor 8, the space at 8 is in the final fifth -> end 9; next start 9-2 = 7
    # window [7,17) reaches the end (13)
    assert spans(chunks) == [(0, 9), (7, 13)]
    assert chunks[0].text == "\u65e5\u672c\u8a9e\u65e5\u672c\u8a9e\u65e5\u672c "
    assert chunks[1].text == "\u672c \u8a9e\u65e5\u672c\u8a9e"
    assert_consistent(text, chunks, 10)


def test_length_equal_to_chunk_runes_is_one_chunk() -> None:
    chunks = chunk_text("d", "abcdefghij", 10, 3)
    assert [(c.chunk_id, c.text, c.start, c.end) for c in chunks] == [("d#chunk-0", "abcdefghij", 0, 10)]


def test_length_one_more_than_chunk_runes_is_two_chunks_with_the_overlap() -> None:
    chunks = chunk_text("d", "abcdefghijk", 10, 3)
    assert [(c.chunk_id, c.text, c.start, c.end) for c in chunks] == [
        ("d#chunk-0", "abcdefghij", 0, 10),
        ("d#chunk-1", "hijk", 7, 11),
    ]
    assert chunks[0].end - chunks[1].start == 3


def test_whitespace_snap_hand_computed() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta"
    # spaces at 5, 10, 16, 22, 30, 35, 39; len 45. Size 20 -> final fifth is the last 4 runes of a window.
    # window [0,20): floor 16, last space in [16,20) is 16 -> end 17; next start 17-5 = 12
    # window [12,32): floor 28, last space in [28,32) is 30 -> end 31; next start 31-5 = 26
    # window [26,46) -> reaches the end, 45
    chunks = chunk_text("greek", text, 20, 5)
    assert [(c.text, c.start, c.end) for c in chunks] == [
        ("alpha beta gamma ", 0, 17),
        ("amma delta epsilon ", 12, 31),
        ("ilon zeta eta theta", 26, 45),
    ]
    assert_consistent(text, chunks, 20)


def test_whitespace_before_the_final_fifth_does_not_snap() -> None:
    text = "abcdefghijklmno pqrstuvwxyz0123"  # the only space is at 15, before floor 16
    chunks = chunk_text("d", text, 20, 4)
    assert [(c.text, c.start, c.end) for c in chunks] == [("abcdefghijklmno pqrs", 0, 20),
                                                           ("pqrstuvwxyz0123", 16, 31)]


def test_newline_snaps_and_the_later_whitespace_wins() -> None:
    chunks = chunk_text("d", "abcdefghijklmnopq\nrstuvwxyz", 20, 4)
    assert chunks[0].text == "abcdefghijklmnopq\n"  # newline at 17 -> end 18
    assert (chunks[1].start, chunks[1].end) == (14, 27)
    chunks = chunk_text("d", "abcdefghijklmnop\nq rstuvwxyz", 20, 4)
    assert chunks[0].text == "abcdefghijklmnop\nq "  # newline at 16, space at 18: the space is later -> end 19
    assert (chunks[1].start, chunks[1].end) == (15, 28)


def test_final_window_is_never_snapped() -> None:
    chunks = chunk_text("d", "abcdefghijklmnop rs", 20, 4)  # space at 16 but the window reaches the end
    assert spans(chunks) == [(0, 19)]


def test_chunk_ids_are_stable_and_numbered_per_document() -> None:
    docs = [("a", ALPHABET), ("b", "xyz"), ("c", ALPHABET[:11])]
    chunks = chunk_corpus(docs, 10, 4)
    assert [c.chunk_id for c in chunks] == ["a#chunk-0", "a#chunk-1", "a#chunk-2", "a#chunk-3",
                                            "b#chunk-0", "c#chunk-0", "c#chunk-1"]
    assert [c.doc_id for c in chunks] == ["a", "a", "a", "a", "b", "c", "c"]
    assert [c.ordinal for c in chunks] == [0, 1, 2, 3, 0, 0, 1]
    assert chunk_corpus(docs, 10, 4) == chunks


def test_consecutive_chunks_overlap_by_exactly_overlap_runes_without_snap() -> None:
    chunks = chunk_text("d", ALPHABET, 10, 4)
    assert spans(chunks) == [(0, 10), (6, 16), (12, 22), (18, 26)]
    assert [c.text for c in chunks] == ["abcdefghij", "ghijklmnop", "mnopqrstuv", "stuvwxyz"]
    assert [a.end - b.start for a, b in zip(chunks, chunks[1:])] == [4, 4, 4]
    assert spans(chunk_text("d", ALPHABET, 10, 0)) == [(0, 10), (10, 20), (20, 26)]


@pytest.mark.parametrize(("text", "size", "overlap"), [
    ("alpha beta gamma delta epsilon zeta eta theta", 20, 5),
    ("alpha beta gamma delta epsilon zeta eta theta", 7, 6),
    ("the quick brown fox\njumps over the lazy dog " * 9, 30, 3),
    ("\u00e9t\u00e9 \U0001f642 \u65e5\u672c\u8a9e " * 13, 11, 2),
    ("     ", 2, 1),
    ("a", 1, 0),
])
def test_chunks_cover_the_whole_text(text: str, size: int, overlap: int) -> None:
    assert_consistent(text, chunk_text("d", text, size, overlap), size)
