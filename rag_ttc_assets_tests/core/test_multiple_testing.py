"""Holm and Benjamini-Hochberg adjusted p-values against hand-computed values."""

import pytest

from rag_ttc_assets.core.multiple_testing import adjust, benjamini_hochberg, holm, significant

P = [0.01, 0.04, 0.03, 0.005]


def test_holm_by_hand() -> None:
    # Sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06).
    assert holm(P) == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)


def test_bh_by_hand() -> None:
    # Sorted: 0.005 (4/1 = 0.02), 0.01 (4/2 = 0.02), 0.03 (4/3 = 0.04), 0.04 (4/4 = 0.04); running min from the top.
    assert benjamini_hochberg(P) == pytest.approx([0.02, 0.04, 0.04, 0.02], abs=1e-15)


def test_monotonicity_is_enforced() -> None:
    # Holm: 0.02 x3 = 0.06, 0.021 x2 = 0.042 -> raised to 0.06 by the running max; 0.5 x1 = 0.5.
    assert holm([0.021, 0.02, 0.5]) == pytest.approx([0.06, 0.06, 0.5], abs=1e-15)
    # BH: 0.01 x3 = 0.03, 0.04 x3/2 = 0.06, 0.045 x3/3 = 0.045 -> 0.04's 0.06 lowered to 0.045 by the running min.
    assert benjamini_hochberg([0.04, 0.01, 0.045]) == pytest.approx([0.045, 0.03, 0.045], abs=1e-15)


def test_capped_at_one() -> None:
    # Holm: 0.4 x3 = 1.2 -> 1, then 0.6 x2 = 1.2 -> 1, 0.9 x1 -> max 1. BH: 0.9 x3/3 = 0.9, 0.6 x3/2 = 0.9,
    # 0.4 x3/1 = 1.2 -> 1 capped, then min(0.9) = 0.9.
    assert holm([0.4, 0.6, 0.9]) == [1.0, 1.0, 1.0]
    assert benjamini_hochberg([0.4, 0.6, 0.9]) == pytest.approx([0.9, 0.9, 0.9], abs=1e-15)


def test_none_passes_through_and_is_not_counted() -> None:
    # m = 2, not 3: 0.01 x2 = 0.02, 0.04 x1 = 0.04 (Holm); 0.01 x2/1 = 0.02, 0.04 x2/2 = 0.04 (BH).
    assert holm([0.04, None, 0.01]) == pytest.approx([0.04, None, 0.02], abs=1e-15)
    assert benjamini_hochberg([None, 0.04, 0.01]) == pytest.approx([None, 0.04, 0.02], abs=1e-15)
    assert holm([None, None]) == [None, None] and holm([]) == []


def test_ties_get_equal_adjusted_values() -> None:
    assert holm([0.01, 0.01]) == [0.02, 0.02]
    assert benjamini_hochberg([0.01, 0.01]) == [0.01, 0.01]


def test_adjust_names_the_method_and_refuses_others() -> None:
    assert adjust(P, "holm") == holm(P) and adjust(P, "bh") == benjamini_hochberg(P)
    with pytest.raises(ValueError, match="p_adjust must be one of holm, bh, got 'bonferroni'"):
        adjust(P, "bonferroni")


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), True])
def test_a_value_that_is_not_a_p_value_is_refused(bad) -> None:
    with pytest.raises(ValueError, match=r"p_values\[1\]"):
        holm([0.1, bad])


def test_significant_on_the_adjusted_value() -> None:
    assert [significant(p, 0.05) for p in holm(P)] == [True, False, False, True]
    assert significant(0.05, 0.05) is True and significant(None, 0.05) is None
    with pytest.raises(ValueError, match="alpha"):
        significant(0.01, 0)
