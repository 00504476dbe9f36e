from rag_ttc_assets.core.counterfactual import alter, plant, repeats, withhold


def test_alter_prefers_a_number_then_a_negation_then_a_swap():
    assert alter("The limit is 3 nested levels.") == ("number", "The limit is 4 nested levels.")
    assert alter("A generator is not restartable.") == ("negation", "A generator is restartable.")
    assert alter("The name is bound in the local scope.") == ("negation", "The name is not bound in the local scope.")
    assert alter('Use "__enter__" before "__exit__" runs.') == ("swap", 'Use "__exit__" before "__enter__" runs.')
    assert alter("Plain words only here.") == ("none", "Plain words only here.")


def test_numbers_inside_identifiers_are_not_numbers():
    kind, text = alter("Call utf8 codecs via x2 names; it is fine.")
    assert kind == "negation" and text == "Call utf8 codecs via x2 names; it is not fine."


def test_plant_records_the_alteration():
    p = plant("q1.r2", "Exactly 2 arguments are required.")
    assert p.chunk_id == "planted#q1.r2" and p.kind == "number"
    assert p.original == "Exactly 2 arguments are required." and p.planted == "Exactly 3 arguments are required."


def test_withhold_removes_every_supporting_chunk_and_keeps_order():
    assert withhold(["a", "b", "c", "d"], {"b", "d", "z"}) == (["a", "c"], ["b", "d"])


def test_repeats_detects_the_altered_claim_not_the_gold_one():
    p = plant("q1.r1", "The default recursion depth is 1000 frames in CPython.")
    assert repeats("1. The default recursion depth is 1001 frames in CPython.", p)
    assert not repeats("The default recursion depth is 1000 frames in CPython.", p)
    assert not repeats(None, p)
    neg = plant("q1.r1", "A lambda can contain statements.")
    assert repeats("Note: a lambda can not contain statements.", neg)
    assert not repeats("A lambda can contain statements.", neg)
