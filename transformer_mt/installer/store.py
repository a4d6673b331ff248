"""Where installed models live: a models folder (`--models_dir`, else $TRANSFORMER_MT_MODELS, else
$XDG_DATA_HOME/transformer-mt/models, else ~/.local/share/transformer-mt/models), a folder a model holding its files
and its receipt (`installed.json`: name, version, languages, source and the files with their hashes). A model is
written into a staging folder beside its place and renamed into it only once verified (`staged`), so a failed
install leaves nothing; a removal renames the folder away before deleting it."""

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from .integrity import RECEIPT, IntegrityError, problems


MODELS_ENV = "TRANSFORMER_MT_MODELS"
CALIBRATION = "calibration.json"


def models_dir(given: str | os.PathLike | None = None) -> Path:
    if given:
        return Path(given)
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV])
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "transformer-mt" / "models"


def check_model_name(name: str) -> str:
    if not name or name.startswith(".") or "/" in name or "\\" in name:
        raise ValueError(f"{name!r} cannot name a model's folder")
    return name


@contextlib.contextmanager
def staged(folder: Path, name: str, overwrite: bool = False) -> Iterator[Path]:
    """A new, empty staging folder in `folder` for model `name`, renamed to `folder/name` when the block ends
    (replacing an installed one only with `overwrite`) and removed, with all it holds, when the block fails."""
    target = folder / check_model_name(name)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists (installed already?); pass --overwrite to replace it")
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.partial-", dir=folder))
    try:
        yield staging
        old = folder / f".{name}.old-{uuid.uuid4().hex}"
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def check_files(staging: Path, files: dict[str, dict], what: str) -> None:
    """An IntegrityError naming every file of `files` that `staging` lacks or holds otherwise."""
    found = problems(staging, files)
    if found:
        raise IntegrityError(f"{what} failed verification; nothing installed:\n  " + "\n  ".join(found))


def write_receipt(model_dir: Path, record: dict) -> None:
    (model_dir / RECEIPT).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def receipt(model_dir: Path) -> dict | None:
    path = model_dir / RECEIPT
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def installed(folder: Path) -> dict[str, dict]:
    """{name: receipt} of every model installed in `folder`."""
    if not folder.is_dir():
        return {}
    return {path.name: found for path in sorted(folder.iterdir()) if (found := receipt(path)) is not None}


def remove(name: str, folder: Path) -> Path:
    """Delete the installed model `name` (a folder with a receipt: nothing else is touched)."""
    target = folder / check_model_name(name)
    if receipt(target) is None:
        raise FileNotFoundError(f"{target} holds no installed model (no {RECEIPT}); nothing removed")
    gone = folder / f".{name}.removed-{uuid.uuid4().hex}"
    os.rename(target, gone)
    shutil.rmtree(gone)
    return target


def calibration_note(model_dir: Path) -> str:
    return (
        f"no calibration: its translations carry no confidence until one is fitted: "
        f"python scripts/score.py --model {model_dir} --data DATA --calibrate (transformer-mt-score outside a "
        f"checkout; DATA: a folder of train/validation/test .tsv files of the pair)"
    )
