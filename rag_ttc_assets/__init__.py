"""rag-ttc-assets: a lab for diagnosing retrieval-augmented answers, one Dagster asset per boundary."""

__version__ = "0.1.0"
