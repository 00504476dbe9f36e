"""Thin wrappers over one library each (tantivy, lancedb, sentence-transformers, litellm, disk)."""
