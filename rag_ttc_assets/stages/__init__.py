"""Stage functions: each reads its inputs from the artifact store, calls core and adapters, and
writes its artifact. No dagster here: the assets in `defs/` and the benchmark call the same code."""
