"""Sharing a trained TransformerMT model on the Hugging Face Hub, usable without installing transformer-mt.

`prepare_for_hub` writes into a model directory what a user without this package needs: flat remote-code files
generated from the package's own sources (`configuration_transformer_mt.py`, `modeling_transformer_mt.py` and the
two modules it imports, `tokenization_transformer_mt.py`), `auto_map` entries in config.json and
tokenizer_config.json, and a model card (README.md) with metadata and BLEU/chrF when the training run measured
them. `push_to_hub` uploads a staged copy through huggingface_hub's normal API (it honours HF_ENDPOINT and
HF_TOKEN) and refuses to replace files of an existing repo unless asked.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

from huggingface_hub import EvalResult, HfApi, ModelCard, ModelCardData

from .configuration import configuration_transformer_mt
from .modeling import embeddings, modeling_transformer_mt, positional_embeddings
from .tokenization import tokenization_transformer_mt


# Remote code sits flat in one folder; the files come from the installed modules (an editable install maps them to
# the repo's top-level folders, a wheel to transformer_mt/*), and only the modeling package's import of the config
# leaves its folder.
REMOTE_CODE = {
    Path(module.__file__).name: Path(module.__file__)
    for module in (configuration_transformer_mt, modeling_transformer_mt, embeddings, positional_embeddings,
                   tokenization_transformer_mt)
}
_IMPORT_REWRITES = {
    "from ..configuration.configuration_transformer_mt import": "from .configuration_transformer_mt import",
}
MODEL_AUTO_MAP = {
    "AutoConfig": "configuration_transformer_mt.TransformerMTConfig",
    "AutoModel": "modeling_transformer_mt.TransformerMTModel",
    "AutoModelForSeq2SeqLM": "modeling_transformer_mt.TransformerMTForConditionalGeneration",
}
TOKENIZER_AUTO_MAP = {"AutoTokenizer": [None, "tokenization_transformer_mt.TransformerMTTokenizerFast"]}
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
# Training leftovers that do not belong in a model repo: checkpoints (with optimizer state), logs, pickles.
_NOT_UPLOADED = ("checkpoint-*", "runs", "tokenizer", "*.bin", "*.pth", "*.pt")


def remote_code_sources() -> dict[str, str]:
    """The flat remote-code files, generated from the installed package's sources."""
    files = {}
    for name, source in REMOTE_CODE.items():
        text = source.read_text(encoding="utf-8")
        for old, new in _IMPORT_REWRITES.items():
            text = text.replace(old, new)
        files[name] = text
    return files


def prepare_for_hub(model_dir: str, repo_id: str | None = None, license: str = "apache-2.0") -> None:
    """Add remote code, `auto_map`s and a model card to a saved model directory (idempotent)."""
    directory = Path(model_dir)
    if not (directory / "config.json").is_file() or not any((directory / f).is_file() for f in WEIGHT_FILES):
        raise FileNotFoundError(f"{model_dir!r} holds no saved model (config.json and model.safetensors expected).")
    for name, text in remote_code_sources().items():
        (directory / name).write_text(text, encoding="utf-8")
    _update_json(directory / "config.json", "auto_map", MODEL_AUTO_MAP)
    if (directory / "tokenizer_config.json").is_file():
        _update_json(directory / "tokenizer_config.json", "auto_map", TOKENIZER_AUTO_MAP)
    model_card(directory, repo_id or directory.name, license).save(directory / "README.md")


def _update_json(path: Path, key: str, value) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = value
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def model_card(directory: Path, repo_id: str, license: str) -> ModelCard:
    """README.md: Hub metadata (with BLEU/chrF when test_results.json exists) and a usage snippet."""
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    results = directory / "test_results.json"
    eval_results = None
    if results.is_file():
        scores = json.loads(results.read_text(encoding="utf-8"))
        eval_results = [
            EvalResult(task_type="translation", dataset_type="text", dataset_name="held-out test split",
                       metric_type=metric, metric_name=name, metric_value=round(scores[f"test_{metric}"], 2))
            for metric, name in (("bleu", "BLEU"), ("chrf", "chrF"))
            if f"test_{metric}" in scores
        ]
    data = ModelCardData(
        language=["en", "de"],
        license=license,
        library_name="transformers",
        pipeline_tag="translation",
        tags=["translation", "transformer-mt", "custom_code", f"{config['position_embedding_type']}-positions"],
        model_name=repo_id,
        eval_results=eval_results,
    )
    scores_line = ""
    if eval_results:
        scores_line = "Test scores: " + ", ".join(f"{r.metric_name} {r.metric_value}" for r in eval_results) + ".\n"
    body = f"""
# {repo_id}

An English-German encoder-decoder Transformer ("Attention Is All You Need") with BERT-style token + segment +
position embedding ({config['position_embedding_type']} positions), d_model {config['d_model']},
{config['encoder_layers']}+{config['decoder_layers']} layers, trained with
[transformer-mt](https://pypi.org/project/transformer-mt/). The model code ships in this repository, so
`trust_remote_code=True` is all a user of plain transformers needs.
{scores_line}
```python
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("{repo_id}", trust_remote_code=True)
model = AutoModelForSeq2SeqLM.from_pretrained("{repo_id}", trust_remote_code=True)
batch = tokenizer(["Click the Save button."], return_tensors="pt")
print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
```
"""
    return ModelCard(f"---\n{data.to_yaml()}\n---\n{body}")


def push_to_hub(model_dir: str, repo_id: str, overwrite: bool = False, private: bool = False,
                token: str | None = None, license: str = "apache-2.0") -> str:
    """Upload model, tokenizer, generation config, code and card to `repo_id`; returns the commit URL.

    The upload is staged in a temporary copy, so `model_dir` is never modified, whether or not the push succeeds.
    An existing repo that already holds any of the files is only updated with `overwrite=True`.
    """
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="transformer-mt-push-") as staging:
        shutil.copytree(model_dir, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*_NOT_UPLOADED))
        prepare_for_hub(staging, repo_id, license)
        if api.repo_exists(repo_id) and not overwrite:
            existing = set(api.list_repo_files(repo_id)) & set(os.listdir(staging))
            if existing:
                raise FileExistsError(
                    f"The Hub repo {repo_id!r} already holds {sorted(existing)}; pass overwrite=True (--overwrite) "
                    "to replace them."
                )
        api.create_repo(repo_id, private=private, exist_ok=True)
        commit = api.upload_folder(repo_id=repo_id, folder_path=staging, commit_message="Upload TransformerMT model")
    return commit.commit_url

