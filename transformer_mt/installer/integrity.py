"""A model's files as the index states them: each file's SHA-256 and size (`manifest`), and every way a directory
differs from that (`problems`), named file by file with what was expected and what was found."""

import hashlib
import os
from pathlib import Path


RECEIPT = "installed.json"  # what an install writes beside the model: its source and its files (never in a manifest)
_BLOCK = 1 << 20


class IntegrityError(ValueError):
    """Files that are not what the index (or an install's receipt) says: missing, of another size or another hash."""


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest(directory: str | os.PathLike) -> dict[str, dict]:
    """{relative POSIX path: {"sha256", "size"}} of every regular file under `directory` (sorted; the receipt, the
    Hub's download bookkeeping `.cache/` and `__pycache__/` left out). A link is refused: an index names files."""
    root = Path(directory)
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] in (".cache", "__pycache__") or relative.as_posix() == RECEIPT:
            continue
        if path.is_symlink():
            raise IntegrityError(f"{path} is a link; a model's files must be plain files")
        if path.is_file():
            found[relative.as_posix()] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    return found


def problems(directory: str | os.PathLike, files: dict[str, dict]) -> list[str]:
    """Every file of `files` (a manifest) that `directory` lacks or holds otherwise, one line each: which file, what
    was expected and what was found. Files the manifest does not name are not its business (a calibration fitted
    after the install, say)."""
    root = Path(directory)
    found = []
    for name, expected in files.items():
        path = root / name
        if not path.is_file() or path.is_symlink():
            found.append(f"{name}: missing")
        elif (size := path.stat().st_size) != expected["size"]:
            found.append(f"{name}: {size:,} bytes, expected {expected['size']:,}")
        elif (digest := sha256_file(path)) != expected["sha256"]:
            found.append(f"{name}: sha256 {digest}, expected {expected['sha256']}")
    return found


def check_name(name: str) -> str:
    """A file name from an index or an archive, refused unless it stays inside the model's folder."""
    parts = name.split("/")
    if not name or name.startswith("/") or "\\" in name or any(part in ("", ".", "..") for part in parts):
        raise IntegrityError(f"{name!r} is not a file name inside a model's folder")
    return name
