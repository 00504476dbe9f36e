"""Dagster wiring only: partitions, resources, assets, checks, jobs. Logic lives in core/ and stages/."""
