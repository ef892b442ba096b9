"""The ONNX copy of a local sentence-transformers model: where it is cached, and how it is exported (with torch).

The cache is a user cache (``$XDG_CACHE_HOME/ragindex/onnx``, or ``RAGINDEX_ONNX_CACHE_DIR``), not the data
dir: the export belongs to the model, not to an index, so every data dir (tests, eval sets, service replicas)
shares one copy, and a search over a read-only data dir can still use it. Each model gets a folder named by a
hash of its fingerprint, its files (name, size, mtime) and :data:`EXPORT_VERSION`, so a changed model or a
changed export is never read from a stale file. An export writes a temporary file in that folder and renames
it into place: a reader (another process, a concurrent first use) sees the whole file or none, and two
concurrent exports of the same model both succeed (the last rename wins; the files are equal).

Only :func:`export_onnx` imports torch; finding an exported file (:func:`onnx_model_path`) never does.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragindex.encoders._hf import quiet_hub
from ragindex.errors import ConfigurationError

log = logging.getLogger(__name__)

EXPORT_VERSION = 1
"""Bump when the exported graph changes (inputs, pooling, opset): old exports are then never read."""

OPSET = 17
MODEL_FILE = "model.onnx"
INT8_MODEL_FILE = "model.int8.onnx"
"""The int8 copy for queries (:func:`quantize_onnx`), beside the float32 export in the model's folder."""
_WEIGHT_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json", "modules.json")


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/ragindex/onnx``, else ``~/.cache/ragindex/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragindex" / "onnx"


@dataclass(frozen=True)
class OnnxLayout:
    """What the light encoder needs to know of a sentence-transformers model directory (read without torch).

    Attributes:
        model_dir: The model directory.
        max_length: Tokens read per text (``max_seq_length``), special tokens included.
        lower_case: sentence-transformers lower-cases the text first (``do_lower_case``).
        dimension: Output dimension.
    """

    model_dir: Path
    max_length: int
    lower_case: bool
    dimension: int


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_layout(model_dir: Path) -> OnnxLayout | None:
    """The layout of ``model_dir`` if the light encoder reproduces its pipeline exactly, else None.

    Supported: a Hugging Face transformer, mean pooling, then optional normalisation (``all-MiniLM-L6-v2`` and
    most sentence-transformers models, e5 among them), with a fast tokenizer. Prompts are text the encoder puts
    in front (:class:`~ragindex.encoders.prompts.Prompts`), so a model with prompts is supported, unless its
    pooling leaves the prompt's tokens out (``include_prompt: false``). Anything else (CLS or max pooling, a
    Dense layer) keeps torch for every text.
    """
    modules = _json(model_dir / "modules.json")
    if not isinstance(modules, list) or not (model_dir / "tokenizer.json").is_file():
        return None
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules if isinstance(m, dict)]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return None
    pooling = _json(model_dir / str(modules[1].get("path", "")) / "config.json")
    if not isinstance(pooling, dict):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    if modes != {"pooling_mode_mean_tokens"}:
        return None
    if pooling.get("include_prompt") is False:  # the mean leaves the prompt's tokens out: not in the graph
        return None
    bert = _json(model_dir / "sentence_bert_config.json") or {}
    hf = _json(model_dir / "config.json") or {}
    max_length = int(bert.get("max_seq_length") or hf.get("max_position_embeddings") or 512)
    dimension = int(pooling.get("word_embedding_dimension") or hf.get("hidden_size") or 0)
    if dimension <= 0:
        return None
    return OnnxLayout(model_dir, max_length, bool(bert.get("do_lower_case", False)), dimension)


def cache_key(fingerprint: str, model_dir: Path) -> str:
    """Folder name of a model's export: a hash of its fingerprint, its files' (name, size, mtime), the export."""
    parts: list[Any] = [EXPORT_VERSION, OPSET, fingerprint, str(model_dir)]
    for name in _WEIGHT_FILES:
        try:
            stat = (model_dir / name).stat()
        except OSError:
            continue
        parts.append((name, stat.st_size, stat.st_mtime_ns))
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:24]


def onnx_model_path(fingerprint: str, model_dir: Path, cache_dir: Path | None = None) -> Path:
    """Where the export of this model is (or will be) kept."""
    return (cache_dir or default_cache_dir()) / cache_key(fingerprint, model_dir) / MODEL_FILE


def export_onnx(layout: OnnxLayout, target: Path) -> Path:
    """Export the transformer and its mean pooling to ``target`` (atomically), with torch.

    The graph takes ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64, dynamic batch and sequence)
    and returns ``sentence_embedding`` (float32, batch x dimension, not normalised).

    Raises:
        ConfigurationError: torch, transformers or onnx is missing, or the export or the write failed (read-only
            or full cache dir); the message names the cause.
    """
    quiet_hub(offline=True)
    try:
        import torch
        from transformers import AutoModel
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ConfigurationError(f"exporting the ONNX encoder needs torch and transformers: {exc}") from exc

    class _Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    def write(tmp: Path) -> None:
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # transformers ships it untyped
        model = AutoModel.from_pretrained(str(layout.model_dir), local_files_only=True, attn_implementation="eager")
        model.eval()
        # a padded sample: tracing with no padding could bake the "no mask" path of the attention in
        ids = torch.ones((2, 8), dtype=torch.long)
        mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3], dtype=torch.long)
        axes = {"batch": 0, "sequence": 1}
        dynamic = {name: {i: a for a, i in axes.items()} for name in ("input_ids", "attention_mask", "token_type_ids")}
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            # the TorchScript exporter is deprecated (and warns so) but needs only `onnx`; torch is pinned
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Pooled(model),
                (ids, mask, torch.zeros_like(ids)),
                str(tmp),
                input_names=["input_ids", "attention_mask", "token_type_ids"],
                output_names=["sentence_embedding"],
                dynamic_axes={**dynamic, "sentence_embedding": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )

    _write_atomically(target, write, "export the ONNX encoder")
    log.info("exported the ONNX encoder of %s to %s", layout.model_dir, target)
    return target


def _write_atomically(target: Path, write: Callable[[Path], None], what: str) -> None:
    """Run ``write`` on a temporary file beside ``target``, then rename it into place (readers see all or none).

    Raises:
        ConfigurationError: ``write`` or the rename failed ("cannot {what} to {target}: ..."); nothing is left.
    """
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".write-", suffix=".onnx.tmp")
        os.close(fd)
        tmp = Path(tmp_name)
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache dir's copy from other users
        os.replace(tmp, target)
    except Exception as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise ConfigurationError(f"cannot {what} to {target}: {exc}", path=str(target)) from exc


def quantize_onnx(source: Path, target: Path) -> Path:
    """Write an int8 copy of the exported graph ``source`` to ``target`` (atomically), with ONNX Runtime's tools.

    Dynamic quantization: each weight matrix becomes int8 with one scale per output channel, and activations are
    quantized per call. On all-MiniLM-L6-v2 a query then costs ~2.4 ms of CPU instead of ~6.1 ms (AVX-512 VNNI,
    one thread) and its vector keeps a cosine of ~0.99 to the float32 one (docs/explanation/light-encoder.md).
    Only queries use it: the indexed vectors stay float32, so the index never depends on this setting.

    Raises:
        ConfigurationError: onnx is missing, or the quantization or the write failed (read-only or full cache dir).
    """

    def write(tmp: Path) -> None:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # the quantizer talks through the root logger: its advice to run "pre-processing" (a warning) and a
        # line per tensor at info level (36 for MiniLM); drop those, keep its real warnings and errors
        root = logging.getLogger()
        chatter = _QuantizerChatter()
        root.addFilter(chatter)
        # it writes its shape-inferred graph beside its input under a fixed name (model-inferred.onnx) and deletes
        # it: processes quantizing at once (the first searches after an install) deleted each other's, and all but
        # one fell back to float32. Each reads the export through a link in a directory of its own.
        private = Path(tempfile.mkdtemp(prefix=".quantize-", dir=tmp.parent))
        try:
            link = private / source.name
            link.symlink_to(source.resolve())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantize_dynamic(link, tmp, per_channel=True, weight_type=QuantType.QInt8)
        finally:
            root.removeFilter(chatter)
            shutil.rmtree(private, ignore_errors=True)

    _write_atomically(target, write, "write the int8 query encoder")
    log.info("wrote the int8 query encoder %s", target)
    return target


class _QuantizerChatter(logging.Filter):
    """Drops the quantizer's info lines and its pre-processing advice, logged to the root logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.INFO:
            return False
        return not record.getMessage().startswith("Please consider to run pre-processing")
