"""One partition per arm, read from the arms file when the definitions load."""

from dagster import StaticPartitionsDefinition

from rag_ttc_assets.lab import Lab


def arm_partitions(lab: Lab) -> StaticPartitionsDefinition:
    return StaticPartitionsDefinition(lab.arms.names)
