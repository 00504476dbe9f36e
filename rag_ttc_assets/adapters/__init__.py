"""Thin wrappers over one library each (tantivy, lancedb, sentence-transformers, litellm, pytrec_eval, disk)."""
