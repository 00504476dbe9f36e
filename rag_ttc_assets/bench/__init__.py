"""`rag-ttc bench`: the product's hot paths against plain references, measured side by side.

Every measurement runs the product path and a reference doing the same work in the same process,
alternating (product first on even rounds, reference first on odd rounds) and repeating R times;
the reported times are medians.  The machine is shared and noisy, so only the RATIO of the two is
compared with a target, never a wall-clock time.

    cost ratio        = product seconds / reference seconds     (lower is better; target "<= x")
    throughput ratio  = reference seconds / product seconds     (higher is better; target ">= x")

Measurements (``--only NAME``, repeatable):

- ``retrieval``: ``stages.retrieval.retrieve`` for every question of the dataset (baseline arm,
  indexes built first) vs a plain loop over the Tantivy searcher and the LanceDB table (same
  query terms, same depth, RRF summed in Python) on the same indexes.  Target cost <= 1.25.
- ``embedding``: ``adapters.embeddings.encode`` over the representation texts (as build_vectors
  calls it) vs a bare ``SentenceTransformer.encode`` on the same model object, same batch size.
  Target throughput >= 0.9.
- ``k_sweep``: the five ``evidence-k`` arms through the Dagster job up to ``admitted_contexts``
  in a fresh store vs one arm the same way in another fresh store.  Target cost <= 1.2.
- ``unused_index``: the ``retrieval-bm25`` arm's retrieval stage (up to ``retrieval_rows``, ``vector_index``
  among it) through the Dagster job from a cold store vs the same run without ``vector_index``
  (``bench/unused_index.py``): the vector index it never reads must cost nothing.  Target cost <= 1.2.
- ``metrics``: ``adapters.trec_eval.evaluate`` (what ``rag-ttc metrics`` and the retrieval_summary asset
  run) over 10,000 seeded synthetic queries vs ``pytrec_eval.RelevanceEvaluator`` called directly, its means
  by ``pytrec_eval.compute_aggregated_measure``, same measures.  Target cost <= 1.1.
- ``dagster_overhead``: every asset and check of one arm through the Dagster job (``arm_job``, in process,
  ephemeral instance), warm caches (answers and verdicts from the provider cache), vs the same asset and check
  bodies called directly in dependency order: the ratio is Dagster's own machinery (run creation, event log,
  data provenance, per-step events), since both sides run the same code of ours.  Target cost <= 1.3.  The
  retrieval graph alone (eight cheap bodies, where the fixed cost shows most) is reported beside it.
- ``memory``: peak resident memory of materializing one full arm (offline generator and judge),
  in a child process so the peak is that arm's alone.
- ``onnx_embedding``: the optional ONNX Runtime backend (``adapters.onnx_embeddings``, fp32 and int8) vs
  the torch ``embeddings.encode`` over the same representation texts, same batch size; with the mean and
  minimum cosine against the torch vectors and recall_10 / ndcg_cut_10 of the ``baseline``,
  ``embedding-onnx`` and ``embedding-onnx-int8`` arms (report only; skipped without the ``onnx`` extra).
- ``report``: headless Chromium rendering the case report of 5,000 synthetic cases (first screen painted) vs a
  plain HTML table of the same rows, same browser (``bench/report_render.py``).  Target cost <= 2.
- ``import``: an imported arm's OTLP JSON (10,000 traces of 20 documents) read, parsed and mapped to questions, corpus
  and ranked / selected / in-the-prompt rows (``imported.import_source``, ``imported.import_mapping``) vs ``json.load`` of the
  same file and one pass over its spans (``bench/import_reading.py``).  Target cost <= 3.

One module per theme (``bench_retrieval.py``: retrieval, embedding, onnx_embedding; ``dagster_jobs.py``: k_sweep,
dagster_overhead, code_location_import; ``bench_metrics.py``, ``memory.py``, ``unused_index.py``, ``report_render.py``, ``import_reading.py``), each
registering its measurements with ``bench_registry.measurement``; the harness (``harness.py``), the labs (``labs.py``)
and the command (``command.py``) beside them; ``--growth`` in ``growth.py``; ``--only scale --chunks N`` (Tantivy and
each LanceDB index type at N generated chunks, the lab's calls against the libraries called directly; it runs alone,
with its own table) in ``scale.py``.

The store lives under ``--home`` (default: a temporary folder, removed afterwards), never in the
user's ``.rag_ttc``.  ``--scale N`` replaces the bundled dataset by N synthetic documents
recombined from its paragraphs (see `write_scaled_dataset`).
"""
