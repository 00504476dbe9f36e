"""Imported systems: answers, ranked lists and chunks of systems the lab did not write (OpenTelemetry spans,
Phoenix projects), mapped onto the lab's records. `<name>.py` is pure (the rules of core/),
`<name>_stage.py` reads and writes the store.
"""
