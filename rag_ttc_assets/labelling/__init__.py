"""Labelling: the people's labels, from the file or the browser to the numbers they correct. Read and checked
(`human_labels`), made on the annotation page (`annotation`, `annotate_stage`), which rows to label (`label_sampling`,
`label_sampling_stage`), kept true to a changing corpus (`label_check`, `label_log`, `label_diff`, `label_drift`,
`label_drift_stage`), and every judged number corrected by them (`ppi`, `ppi_difference`, `ppi_records`,
`accept_records`, `accept_stage`; `human_page` shows them beside the judges). `<name>.py` is pure (no I/O, no
dagster, the rules of core/), `<name>_stage.py` reads the store, `<name>_page.py` is what a person reads.
"""
