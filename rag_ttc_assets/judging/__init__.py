"""Judging: the statement judge, the request judge and its offline jurors, a panel of them, and the judges
measured against people (agreement, claims). Pure logic sits beside its stage: `<name>.py` is pure (no I/O,
no dagster, the rules of core/), `<name>_stage.py` reads and writes the store and calls the providers.
"""
