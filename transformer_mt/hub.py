"""Sharing a trained TransformerMT model on the Hugging Face Hub, usable without installing transformer-mt.

`prepare_for_hub` writes into a model directory what a user without this package needs: flat remote-code files
generated from the package's own sources (`configuration_transformer_mt.py`, `modeling_transformer_mt.py` and the
modules it imports, `tokenization_transformer_mt.py`), `auto_map` entries in config.json and
tokenizer_config.json, and a model card (README.md) with metadata and BLEU/chrF when the training run measured
them. `push_to_hub` uploads a staged copy through huggingface_hub's normal API (it honours HF_ENDPOINT and
HF_TOKEN) and refuses to replace files of an existing repo unless asked.
"""

import json
import shutil
import tempfile
from pathlib import Path

from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData


try:  # huggingface_hub 2 talks through httpx2, 1 through httpx; their network errors are not OSErrors
    from httpx2 import TransportError as NetworkError
except ImportError:  # pragma: no cover
    from httpx import TransportError as NetworkError

from .checkpoints import load_translator
from .configuration import configuration_transformer_mt
from .modeling import embeddings, input_checks, modeling_transformer_mt, positional_embeddings
from .tokenization import tokenization_transformer_mt


# Remote code sits flat in one folder; the files come from the installed modules (an editable install maps them to
# the repo's top-level folders, a wheel to transformer_mt/*), and only the modeling package's import of the config
# leaves its folder.
REMOTE_CODE = {
    Path(module.__file__).name: Path(module.__file__)
    for module in (
        configuration_transformer_mt,
        modeling_transformer_mt,
        embeddings,
        positional_embeddings,
        input_checks,
        tokenization_transformer_mt,
    )
}
_IMPORT_REWRITES = {
    "from ..configuration.configuration_transformer_mt import": "from .configuration_transformer_mt import",
}
MODEL_AUTO_MAP = {
    "AutoConfig": "configuration_transformer_mt.TransformerMTConfig",
    "AutoModel": "modeling_transformer_mt.TransformerMTModel",
    "AutoModelForSeq2SeqLM": "modeling_transformer_mt.TransformerMTForConditionalGeneration",
    "AutoModelForCausalLM": "modeling_transformer_mt.TransformerMTForCausalLM",  # the decoder alone
}
TOKENIZER_AUTO_MAP = {"AutoTokenizer": [None, "tokenization_transformer_mt.TransformerMTTokenizerFast"]}
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
# What a push uploads from a model directory, and nothing else: a run directory also holds checkpoints with
# optimizer state, logs, notes and whatever a user keeps there (.env, wandb/, ...). The tokenizer files cover this
# package's tokenizer (target_tokenizer.json: its target vocabulary, when separate) and those of imported
# checkpoints (Marian's SentencePiece models, BERT's WordPiece).
UPLOADED_FILES = (
    "config.json",
    "generation_config.json",
    *WEIGHT_FILES,
    "tokenizer.json",
    "target_tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "source.spm",
    "target.spm",
    "vocab.json",
    "target_vocab.json",
    "vocab.txt",
    "merges.txt",
)
UPLOADED_PATTERNS = ("model-*-of-*.safetensors",)  # the shards of a large model
GENERATED_FILES = ("README.md", *REMOTE_CODE)  # written by prepare_for_hub; a file of that name in the directory
# is replaced by the generated one.


def remote_code_sources() -> dict[str, str]:
    """The flat remote-code files, generated from the installed package's sources."""
    files = {}
    for name, source in REMOTE_CODE.items():
        text = source.read_text(encoding="utf-8")
        for old, new in _IMPORT_REWRITES.items():
            text = text.replace(old, new)
        files[name] = text
    return files


def prepare_for_hub(
    model_dir: str, repo_id: str | None = None, license: str | None = None, scores_dir: str | None = None
) -> None:
    """Add remote code, `auto_map`s and a model card to a saved model directory (idempotent).

    The card's BLEU/chrF come from `test_results.json` in `scores_dir` (default: `model_dir`).
    """
    directory = Path(model_dir)
    _check_saved_model(directory)
    for name, text in remote_code_sources().items():
        (directory / name).write_text(text, encoding="utf-8")
    _update_json(directory / "config.json", "auto_map", MODEL_AUTO_MAP)
    if (directory / "tokenizer_config.json").is_file():
        _update_json(directory / "tokenizer_config.json", "auto_map", TOKENIZER_AUTO_MAP)
    card = model_card(directory, Path(scores_dir or directory), repo_id or directory.name, license)
    card.save(directory / "README.md")


def _check_saved_model(directory: Path) -> None:
    if not (directory / "config.json").is_file() or not any((directory / f).is_file() for f in WEIGHT_FILES):
        raise FileNotFoundError(
            f"{str(directory)!r} holds no saved model (config.json and model.safetensors expected)."
        )


def upload_plan(model_dir: str, extra_files=()) -> list[str]:
    """The names, relative to `model_dir`, of every file a push uploads (the generated ones included), in order.

    Only the model's own files (UPLOADED_FILES, weight shards) and the `extra_files` named are taken. Each must be
    a file inside the directory: a link that leads out of it is refused, not followed.
    """
    directory = Path(model_dir)
    _check_saved_model(directory)
    names = [name for name in UPLOADED_FILES if (directory / name).is_file()]
    names += sorted(path.name for pattern in UPLOADED_PATTERNS for path in directory.glob(pattern))
    for name in extra_files:
        path = directory / name
        if Path(name).is_absolute() or ".." in Path(name).parts or not path.is_file():
            raise FileNotFoundError(f"--extra_files {name!r}: not a file inside {model_dir!r}.")
        names.append(Path(name).as_posix())
    root = directory.resolve()
    for name in names:
        target = (directory / name).resolve()
        if root not in target.parents:
            raise ValueError(
                f"{str(directory / name)!r} is a link to {str(target)!r}, outside {model_dir!r}; a push "
                "never follows links out of the model directory (copy the file in instead)."
            )
    return list(dict.fromkeys([*(name for name in names if name not in GENERATED_FILES), *GENERATED_FILES]))


def _update_json(path: Path, key: str, value) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = value
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def card_eval_results(info: dict, scores: dict) -> list[EvalResult] | None:
    """The card's test BLEU and chrF (test_results.json's `scores`) as Hub eval results, or None without any."""
    return [
        EvalResult(
            task_type="translation",
            dataset_type=info.get("data") or "text",
            dataset_name=f"{info.get('data') or 'held-out'} test split",
            metric_type=metric,
            metric_name=name,
            metric_value=round(scores[f"test_{metric}"], 2),
            metric_config=scores.get(f"test_{metric}_signature"),
        )
        for metric, name in (("bleu", "BLEU"), ("chrf", "chrF"))
        if f"test_{metric}" in scores
    ] or None


def known_facts(info: dict, licenses: list[str], eval_results: list[EvalResult] | None) -> list[str]:
    """The card's lines of what is known: the test scores with their signatures, then (training_info.json's `info`)
    the training data, its licenses, attribution and sources, and the recipe."""
    lines = []
    if eval_results:
        lines.append(
            "Test scores (sacreBLEU): "
            + "; ".join(
                f"{r.metric_name} {r.metric_value} ({r.metric_config})"
                if r.metric_config
                else f"{r.metric_name} {r.metric_value}"
                for r in eval_results
            )
            + "."
        )
    if info:
        data_name = info["data"] + (f" ({info['dataset_config_name']})" if info.get("dataset_config_name") else "")
        lines.append(
            f"Training data: {data_name}"
            + (f", licensed {' and '.join(licenses)}" if licenses else ", license not stated")
            + (f"; attribution: {info['data_attribution']}" if info.get("data_attribution") else "")
            + "."
        )
        lines.extend(sources_markdown(info.get("data_sources") or []))
        recipe = info.get("recipe", {})
        lines.append(
            "Recipe: "
            + (f"preset {info['preset']}, " if info.get("preset") else "")
            + ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in recipe.items())
            + "."
        )
    return lines


def model_card(directory: Path, scores_dir: Path, repo_id: str, license: str | None = None) -> ModelCard:
    """README.md from what is known: Hub metadata and text with the languages, the training data's licenses and
    attribution and the recipe (training_info.json, written by training), the test scores with their sacreBLEU
    signatures (test_results.json in scores_dir), the architecture and position type (config.json), and a usage
    snippet. `license` (the model's) defaults to the data's: one license as it is, several as "other"."""
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    info_path = scores_dir / "training_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    results = scores_dir / "test_results.json"
    scores = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else {}
    eval_results = card_eval_results(info, scores)
    licenses = info.get("data_licenses") or []
    if license is None:
        license = licenses[0] if len(licenses) == 1 else ("other" if licenses else None)
    languages = [info[key] for key in ("source_lang", "target_lang") if info.get(key)] or None
    data = ModelCardData(
        language=languages,
        license=license,
        license_name=" AND ".join(licenses) if license == "other" else None,
        library_name="transformers",
        pipeline_tag="translation",
        tags=["translation", "transformer-mt", "custom_code", f"{config['position_embedding_type']}-positions"],
        model_name=repo_id,
        eval_results=eval_results,
    )
    pair = f"{info['source_lang']}-{info['target_lang']}" if languages else "A"
    lines = known_facts(info, licenses, eval_results)
    known = "\n".join(lines) + ("\n" if lines else "")
    body = f"""
# {repo_id}

{pair} encoder-decoder Transformer ("Attention Is All You Need") with BERT-style token + segment +
position embedding ({config["position_embedding_type"]} positions), d_model {config["d_model"]},
{config["encoder_layers"]}+{config["decoder_layers"]} layers, trained with
[transformer-mt](https://pypi.org/project/transformer-mt/). The model code ships in this repository, so
`trust_remote_code=True` is all a user of plain transformers needs.

{known}
```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("{repo_id}", trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained("{repo_id}", trust_remote_code=True)
batch = tokenizer(["Click the Save button."], return_tensors="pt")
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```
"""
    return ModelCard(f"---\n{data.to_yaml()}\n---\n{body}")


def sources_markdown(sources: list[dict], column: str = "origin") -> list[str]:
    """The model card's table of where the training pairs came from (training_info.json's `data_sources`, from
    `transformer_mt.data.data_sources` of `column`): one row per origin with its pairs and license."""
    if not sources:
        return []
    rows = [
        f"| {source[column]} | {source['pairs']:,} | {source.get('license') or 'not stated'} | "
        f"{source.get('what') or ''} |"
        for source in sources
    ]
    return ["", f"| {column} | training pairs | license | what |", "| --- | ---: | --- | --- |", *rows, ""]


def push_to_hub(
    model_dir: str,
    repo_id: str,
    overwrite: bool = False,
    private: bool = False,
    token: str | None = None,
    license: str | None = None,
    extra_files=(),
    dry_run: bool = False,
) -> tuple[list[str], str | None]:
    """Upload the model's files (`upload_plan`), generated code and card to `repo_id`.

    The model is loaded strictly first (`checkpoints.load_translator`): a damaged one, or one with another
    tokenizer than it was trained with, is refused before anything is sent.
    Returns the names uploaded and the commit URL (None for a `dry_run`, which only checks and lists). The upload is
    staged in a temporary copy of exactly those files, so `model_dir` is never modified. An existing repo that
    already holds any of them is only updated with `overwrite=True`.
    """
    plan = upload_plan(model_dir, extra_files)
    load_translator(model_dir)  # a damaged model, or one with another tokenizer, is named, not pushed
    if dry_run:
        return plan, None
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="transformer-mt-push-") as staging:
        for name in plan:
            if (Path(model_dir) / name).is_file() and name not in GENERATED_FILES:
                (Path(staging) / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(model_dir) / name, Path(staging) / name)
        prepare_for_hub(staging, repo_id, license, scores_dir=model_dir)
        try:
            if api.repo_exists(repo_id) and not overwrite:
                existing = set(api.list_repo_files(repo_id)) & set(plan)
                if existing:
                    raise FileExistsError(
                        f"The Hub repo {repo_id!r} already holds {sorted(existing)}; pass overwrite=True "
                        f"(--overwrite) "
                        "to replace them."
                    )
            api.create_repo(repo_id, private=private, exist_ok=True)
            commit = api.upload_folder(
                repo_id=repo_id, folder_path=staging, commit_message="Upload TransformerMT model"
            )
        except NetworkError as error:  # not an OSError in huggingface_hub's HTTP client: say what failed
            raise ConnectionError(f"cannot reach the Hub at {api.endpoint}: {error}") from None
    return plan, commit.commit_url
