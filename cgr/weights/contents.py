"""What a model part (a reader, a query encoder, a support reader, a chain ranker) may hold,
judged by each file's content, not its name: a pickle named `vocab.txt` or `weights-00001` is
refused like one named `pytorch_model.bin`. And what its JSON may not ask of the loaders: the
settings a model loads with are cgr's (cgr.weights.loaders), so a folder's json that names
loader settings (`model_kwargs`, `auto_map`, `dtype: auto`, ...) is refused, naming the file
and the key, before any weight file is opened.

A part may hold safetensors weights (a valid header whose tensors fit the data), JSON configs,
tokenizer files (UTF-8 text vocabularies, SentencePiece models) and its card; anything else,
or any file whose first bytes are a pickle, a zip archive (torch.save's format), an executable
or a script, is refused."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

from cgr.data import jsonio
from cgr.errors import ConfigError


class ModelFolderError(ConfigError):
    pass


MAX_SAFETENSORS_HEADER = 100_000_000  # the format's own limit on its JSON header
MAX_JSON_BYTES = 50_000_000  # large multilingual tokenizer.json files are ~20 MB
MAX_TEXT_BYTES = 50_000_000
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}  # fmt: skip
# UTF-8 text a part may hold (vocabularies, BPE merges, the card, git's attributes)
TEXT_NAMES = {"vocab.txt", "merges.txt", "README.md", ".gitattributes", "LICENSE", "LICENSE.txt",
              "LICENSE.md", "NOTICE"}  # fmt: skip
# SentencePiece models: a protobuf ModelProto, whose first field (its pieces) is tag 0x0a
SENTENCEPIECE_NAMES = {"spiece.model", "sentencepiece.bpe.model", "sentencepiece.model",
                       "tokenizer.model", "source.spm", "target.spm"}  # fmt: skip
# keys that ask a loader for settings (transformers' from_pretrained, sentence-transformers'
# module configs): cgr passes its own, a folder never chooses them. Not `local_files_only`:
# transformers writes it into every tokenizer_config.json it saves, and cgr's own (True for a
# local folder) is passed after it
LOADER_KEYS = {
    "model_kwargs", "model_args", "config_kwargs", "config_args", "tokenizer_kwargs",
    "tokenizer_args", "processor_kwargs", "auto_map", "trust_remote_code", "use_safetensors",
    "weights_only", "cache_dir", "cache_folder", "revision", "token",
    "use_auth_token", "subfolder", "gguf_file", "file_name", "quantization_config", "device_map",
    "custom_pipelines",
}  # fmt: skip
# dtypes a config may name (what the weights are); "auto" makes the loader open the weights
# to infer one, and cgr always passes the dtype it loads with (cgr.weights.loaders)
DTYPES = {"float32", "float16", "bfloat16", "float64"}
DTYPE_KEYS = {"dtype", "torch_dtype"}
# JSON a tokenizer library reads as data (token -> id maps): its keys are tokens, not settings
TOKEN_MAPS = {"tokenizer.json", "vocab.json", "added_tokens.json"}
DATA_KEYS = {"id2label", "label2id", "added_tokens_decoder", "vocab"}  # maps of names, not settings


def sniff(path: Path, head: bytes) -> str | None:
    """What the first bytes of a file say it is, where that is something that runs or
    unpickles: a pickle (protocol 2-5), a zip (torch.save), an executable, a script."""
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return f"a pickle (protocol {head[1]})"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive (torch.save's pickle format)"
    if head.startswith(b"\x7fELF") or head.startswith(b"MZ") or head[:4] in (
        b"\xcf\xfa\xed\xfe", b"\xfe\xed\xfa\xcf", b"\xca\xfe\xba\xbe"):  # fmt: skip
        return "an executable"
    if head.startswith(b"#!"):
        return "a script"
    return None


def check_part(folder: Path, what: str) -> None:
    """Every file below `folder` (a model part) judged by its content; every JSON's keys
    checked for loader settings; shard indexes name only safetensors files inside `folder`."""
    for path in sorted(folder.rglob("*")):
        if path.is_dir():
            continue
        check_file(path, folder, what)


def check_gguf(path: Path, what: str) -> None:
    """A GGUF file (llama.cpp's format, read by the gguf library, never unpickled)."""
    with _open_plain(path, what) as f:
        head = f.read(4)
    if head != b"GGUF":
        raise ModelFolderError(f"{path}: not a GGUF file ({what})")


def _open_plain(path: Path, what: str):
    """A binary handle on `path`, refused unless a plain file (a FIFO or device is refused
    before it is read). A link is followed and what it opens is judged: a hub cache's snapshot
    is links to its blobs; a shared model folder's links out are refused by its own rule
    (cgr.pretrained.folder.check_no_code)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise ModelFolderError(
            f"{path}: cannot be read ({e.strerror or type(e).__name__})"
        ) from None
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise ModelFolderError(f"{path}: not a plain file ({what})")
    return f


def check_file(path: Path, folder: Path, what: str) -> None:
    """One file of a part, read through one handle (the content judged is the content opened;
    a FIFO or device is refused before it is read)."""
    with _open_plain(path, what) as f:
        info = os.fstat(f.fileno())
        head = f.read(8)
        if (kind := sniff(path, head)) is not None:
            raise ModelFolderError(
                f"{path}: {kind}, which cgr never loads ({what}); a model part holds "
                "safetensors weights, JSON configs and tokenizer files only"
            )
        name = path.name
        if name.endswith(".safetensors"):
            problem = _safetensors_problem(f, head, info.st_size)
            if problem:
                raise ModelFolderError(f"{path}: not a readable safetensors file ({problem})")
        elif name.endswith(".json"):
            _check_json(path, f, head, info.st_size, folder)
        elif name in TEXT_NAMES or name.endswith(".md"):
            _check_text(path, f, head, info.st_size)
        elif name in SENTENCEPIECE_NAMES:
            if head[:1] != b"\x0a":
                raise ModelFolderError(f"{path}: not a SentencePiece model ({what})")
        else:
            raise ModelFolderError(
                f"{path}: a file cgr does not load ({what}); a model part holds safetensors "
                "weights, JSON configs and tokenizer files only (remove it)"
            )


def _safetensors_problem(f, head: bytes, file_size: int) -> str | None:
    """The header as safetensors' loader reads it: the 8-byte length, the JSON header, and
    every tensor's offsets inside the data, sized by dtype and shape, so a cut file (an intact
    header over missing data) or lying offsets are named here, not in a traceback."""
    size = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
    data_bytes = file_size - 8 - size
    if not 0 < size <= MAX_SAFETENSORS_HEADER or data_bytes < 0:
        return "header length"
    try:
        header = jsonio.loads(f.read(size))
    except (ValueError, UnicodeDecodeError):
        return "header"
    return tensor_problem(header, data_bytes)


def tensor_problem(header: object, data_bytes: int) -> str | None:
    if not isinstance(header, dict):
        return "header"
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = spec["data_offsets"]
            count = 1
            for dim in spec["shape"]:
                if not isinstance(dim, int) or dim < 0:
                    return f"tensor {name!r}: shape"
                count *= dim
            width = DTYPE_BYTES[spec["dtype"]]
        except (KeyError, TypeError, ValueError):
            return f"tensor {name!r}: dtype, shape or offsets"
        ints = all(isinstance(x, int) for x in (begin, end))
        if not (ints and 0 <= begin <= end <= data_bytes and end - begin == count * width):
            return (
                f"tensor {name!r}: offsets {begin}..{end} do not fit the data ({data_bytes} bytes)"
            )
    return None


def _read_rest(path: Path, f, head: bytes, size: int, limit: int, what: str) -> bytes:
    if size > limit:
        raise ModelFolderError(f"{path}: {size:,} bytes (at most {limit:,} for {what})")
    return head + f.read(limit + 1 - len(head))


def _check_text(path: Path, f, head: bytes, size: int) -> None:
    data = _read_rest(path, f, head, size, MAX_TEXT_BYTES, "a text file")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFolderError(f"{path}: not UTF-8 text") from None
    if b"\x00" in data:
        raise ModelFolderError(f"{path}: not text (a NUL byte)")


def _check_json(path: Path, f, head: bytes, size: int, folder: Path) -> None:
    data = _read_rest(path, f, head, size, MAX_JSON_BYTES, "a JSON file")
    try:
        value = jsonio.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ModelFolderError(f"{path}: not a readable JSON file ({type(e).__name__})") from None
    if path.name not in TOKEN_MAPS:
        if (key := loader_key(value)) is not None:
            raise ModelFolderError(
                f"{path}: field {key} asks the loader for its own settings; cgr decides how a "
                "model loads (safetensors only, no code, local files), never the folder "
                "(remove the field)"
            )
    if path.name.endswith(".index.json"):
        _check_shard_index(path, value, folder)


def loader_key(value: object, where: str = "") -> str | None:
    """The first key (dotted) in a JSON value that asks a loader for settings, or None."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if (found := loader_key(item, f"{where}[{i}]")) is not None:
                return found
        return None
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        name = f"{where}.{key}" if where else str(key)
        if key in LOADER_KEYS:
            return name
        if key in DTYPE_KEYS and item is not None and item not in DTYPES:
            return f"{name} ({item!r}: cgr loads float32, float16, bfloat16 or float64 weights)"
        if key not in DATA_KEYS and (found := loader_key(item, name)) is not None:
            return found
    return None


def _check_shard_index(path: Path, index: object, folder: Path) -> None:
    """A shard index (`model.safetensors.index.json`) names safetensors files in this folder:
    a `pytorch_model.bin.index.json`, or one naming a pickle or a file elsewhere, is refused."""
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not path.name.endswith(".safetensors.index.json") or not isinstance(weight_map, dict):
        raise ModelFolderError(
            f"{path}: a shard index of weights cgr does not load (safetensors shards only)"
        )
    for tensor, name in weight_map.items():
        shard = Path(name) if isinstance(name, str) else None
        if (
            shard is None
            or shard.is_absolute()
            or ".." in shard.parts
            or not name.endswith(".safetensors")
            or not (folder / shard).is_file()
        ):
            raise ModelFolderError(
                f"{path}: field weight_map.{tensor} names {name!r}, not a safetensors file "
                "in this folder"
            )
