"""inspect's markdown holds untrusted text (requests, chunk IDs and answers of an imported system): a `|` or a line
break inside a cell must not break its table, and an answer holding a code fence must not close its own."""

from rag_ttc_assets.stages.inspect import _fence, _md_safe


def test_a_cell_keeps_its_table_whatever_the_text_holds():
    v = {"requests": [{"id": "q1.r1", "text": "a | b\u2028c\x1cd\r\ne"}], "answer": {"raw_response": "x | y\nz"}}
    safe = _md_safe(v)
    assert safe["requests"][0]["text"] == "a \\| b c d e"
    row = f"| {safe['requests'][0]['id']} | {safe['requests'][0]['text']} |"
    assert len(row.splitlines()) == 1 and row.replace("\\|", "").count("|") == 3
    assert safe["answer"]["raw_response"] == "x | y\nz"  # the answer is shown verbatim, in its fence


def test_an_answer_with_a_code_fence_gets_a_longer_fence():
    assert _fence("plain") == "```"
    assert _fence("```python\nx = 1\n```") == "````"


def test_a_jurors_coverage_is_shown_on_the_side_of_its_threshold_it_lies():
    from rag_ttc_assets.stages.inspect import _juror_coverage

    # 0.6499 beside a not_addressed at the BERTScore juror's 0.65 is not shown "0.65"; 0.4999 not "0.50".
    assert _juror_coverage(0.6499) == "0.6499" and _juror_coverage(0.4999) == "0.4999"
    assert _juror_coverage(0.65) == "0.65" and _juror_coverage(0.7312) == "0.73" and _juror_coverage(None) == "-"
