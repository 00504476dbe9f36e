from __future__ import annotations

from rag_ttc_assets.core.chunking import Chunk, chunk_text
from rag_ttc_assets.core.evidence_map import quote_spans, supporting_chunk_ids

TEXT = "abcdefghijklmnopqrstuvwxyz0123"  # 30 runes


def chunks(text: str, bounds: list[tuple[int, int]], doc_id: str = "d") -> list[Chunk]:
    return [Chunk(chunk_id=f"{doc_id}#chunk-{n}", doc_id=doc_id, ordinal=n, text=text[s:e], runes=e - s, start=s,
                  end=e) for n, (s, e) in enumerate(bounds)]


THIRDS = chunks(TEXT, [(0, 10), (10, 20), (20, 30)])


def test_quote_spans() -> None:
    assert quote_spans(TEXT, "cdef") == [(2, 6)]
    assert quote_spans(TEXT, "missing") == []
    assert quote_spans("a cat, a cat", "cat") == [(2, 5), (9, 12)]
    assert quote_spans("aaaa", "aa") == [(0, 2), (1, 3), (2, 4)]  # overlapping occurrences too


def test_quote_wholly_inside_one_chunk() -> None:
    assert supporting_chunk_ids(TEXT, "cdef", THIRDS) == ["d#chunk-0"]
    assert supporting_chunk_ids(TEXT, "klmnopqrst", THIRDS) == ["d#chunk-1"]  # exactly the chunk
    assert supporting_chunk_ids(TEXT, "0123", THIRDS) == ["d#chunk-2"]


def test_quote_split_70_30_is_supported_by_the_larger_part_only() -> None:
    # "defghijklm" is [3,13): chunk 0 covers [3,10) = 7 runes, chunk 1 covers [10,13) = 3 runes
    assert supporting_chunk_ids(TEXT, "defghijklm", THIRDS) == ["d#chunk-0"]
    # "hijklmnopq" is [7,17): chunk 0 covers 3, chunk 1 covers 7
    assert supporting_chunk_ids(TEXT, "hijklmnopq", THIRDS) == ["d#chunk-1"]


def test_quote_split_50_50_is_supported_by_both() -> None:
    # "fghijklmno" is [5,15): 5 runes in each chunk
    assert supporting_chunk_ids(TEXT, "fghijklmno", THIRDS) == ["d#chunk-0", "d#chunk-1"]
    # odd length 5, [8,13): 2 and 3 runes; need is 2.5 -> only chunk 1
    assert supporting_chunk_ids(TEXT, "ijklm", THIRDS) == ["d#chunk-1"]


def test_quote_appearing_twice_in_a_document() -> None:
    text = "ab" + "xyz" + "cdefg" + "hijklmnopq" + "rs" + "xyz" + "tuvwx"  # "xyz" at [2,5) and [22,25)
    assert quote_spans(text, "xyz") == [(2, 5), (22, 25)]
    assert supporting_chunk_ids(text, "xyz", chunks(text, [(0, 10), (10, 20), (20, 30)])) == ["d#chunk-0",
                                                                                               "d#chunk-2"]
    # both occurrences inside one chunk: listed once
    assert supporting_chunk_ids(text, "xyz", chunks(text, [(0, 30)])) == ["d#chunk-0"]


def test_quote_in_overlapping_chunks_is_supported_by_both() -> None:
    overlapping = chunks(TEXT, [(0, 12), (8, 20), (16, 30)])
    assert supporting_chunk_ids(TEXT, "ijk", overlapping) == ["d#chunk-0", "d#chunk-1"]  # [8,11)
    # from the real chunker: [0,10), [6,16), [12,22), [18,26) over the alphabet
    alphabet = TEXT[:26]
    real = chunk_text("doc", alphabet, 10, 4)
    assert [(c.start, c.end) for c in real] == [(0, 10), (6, 16), (12, 22), (18, 26)]
    assert supporting_chunk_ids(alphabet, "ghij", real) == ["doc#chunk-0", "doc#chunk-1"]
    # [4,10): wholly in chunk 0, 4 of 6 runes in chunk 1 -> both
    assert supporting_chunk_ids(alphabet, "efghij", real) == ["doc#chunk-0", "doc#chunk-1"]
    # [2,9): wholly in chunk 0, 3 of 7 runes in chunk 1 -> chunk 0 only
    assert supporting_chunk_ids(alphabet, "cdefghi", real) == ["doc#chunk-0"]


def test_quote_not_in_the_document_or_no_chunks() -> None:
    assert supporting_chunk_ids(TEXT, "zz", THIRDS) == []
    assert supporting_chunk_ids(TEXT, "cdef", []) == []
