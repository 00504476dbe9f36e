"""Diagnosis: the failure flow and request completeness of each arm, and the written diagnosis of a sweep.
`<name>.py` is pure (the rules of core/), `<name>_stage.py` reads and writes the store, `<name>_page.py`
writes what a person reads (the report layer).
"""
