"""Sharing on the Hub: remote code generated from the sources, the model card, and a push/load round trip."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from huggingface_hub import ModelCard

from transformer_mt import train_tokenizer, training
from transformer_mt.data import data_sources
from transformer_mt.hub import REMOTE_CODE, prepare_for_hub, remote_code_sources

from .hub.server import local_hub
from .utils import DATA, POSITION_TYPES, SCRIPTS, SENTENCES, TINY, tiny_model
from .utils import save_tiny as save_tiny_model


# The local Hub's tests set their own environment: online for 127.0.0.1, whatever HF_HUB_OFFLINE says.
pytestmark = pytest.mark.usefixtures("local_hub_environment")

# Loads model directories or Hub repos with trust_remote_code, one after the other, in a process where
# transformer_mt cannot be imported, and writes each one's logits and greedy output for SENTENCES to a JSON file.
LOAD_WITHOUT_PACKAGE = """
import importlib.abc, json, sys
class HidePackage(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "transformer_mt":
            raise ImportError(name + " is hidden in this process")
sys.meta_path.insert(0, HidePackage())
import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
sources, sentences, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
loaded = []
for source in sources:
    tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=True)
    model = AutoModelForSeq2SeqLM.from_pretrained(source, trust_remote_code=True).eval()
    batch = tokenizer(sentences, return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=torch.ones_like(batch["input_ids"][:, :3])).logits
    ids = model.generate(**batch, max_new_tokens=8, do_sample=False)
    loaded.append({"module": type(model).__module__, "tokenizer": type(tokenizer).__name__,
                   "logits": logits.tolist(), "translations": tokenizer.batch_decode(ids, skip_special_tokens=True),
                   "package_loaded": "transformer_mt" in sys.modules})
json.dump(loaded, open(out, "w"))
"""

# Runs scripts/push_to_hub.py (as its own process would: run as __main__, its exit code kept) once for each argument
# list, in this one process, and prints [[exit code, stdout, stderr], ...] as JSON.
PUSH_EACH = """
import contextlib, io, json, runpy, sys, traceback
script, answers = sys.argv[1], []
for argv in json.loads(sys.argv[2]):
    stdout, stderr, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [script, *argv]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except BaseException:
            code = 1
            traceback.print_exc()
    answers.append([code, stdout.getvalue(), stderr.getvalue()])
print(json.dumps(answers))
"""


def save_tiny(directory: Path, position_type: str = "sinusoidal", test_results: dict | None = None):
    model, tokenizer = save_tiny_model(directory, position_type)
    if test_results:
        (directory / "test_results.json").write_text(json.dumps(test_results))
    return model, tokenizer


def expected_outputs(model, tokenizer):
    batch = tokenizer(SENTENCES, return_tensors="pt", padding=True)
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=torch.ones_like(batch["input_ids"][:, :3])).logits
    ids = model.generate(**batch, max_new_tokens=8, do_sample=False)
    return logits, tokenizer.batch_decode(ids, skip_special_tokens=True)


def load_without_package(source: str, tmp_path: Path, env: dict | None = None) -> dict:
    return load_each_without_package([source], tmp_path, env)[0]


def load_each_without_package(sources: list[str], tmp_path: Path, env: dict | None = None) -> list[dict]:
    """LOAD_WITHOUT_PACKAGE's results for every source, loaded in turn in one fresh process."""
    out = tmp_path / "loaded.json"
    result = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_PACKAGE, json.dumps(sources), json.dumps(SENTENCES), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


def test_remote_code_is_the_package_source_with_one_import_rewritten():
    files = remote_code_sources()
    assert files == remote_code_sources()  # regenerated identically
    for name, text in files.items():
        source = REMOTE_CODE[name].read_text(encoding="utf-8")
        changed = [(a, b) for a, b in zip(source.splitlines(), text.splitlines()) if a != b]
        expected = 1 if name == "modeling_transformer_mt.py" else 0
        assert len(changed) == expected, (name, changed)
        for node in ast.walk(ast.parse(text)):  # only transformers/torch/tokenizers/stdlib and each other
            if isinstance(node, ast.ImportFrom) and node.level:
                assert f"{node.module}.py" in files, (name, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert all(m.split(".")[0] not in {"transformer_mt", "configuration", "modeling"} for m in modules)


@pytest.fixture(scope="module")
def loaded_from_directories(tmp_path_factory) -> dict:
    """{position type: (model, tokenizer, what LOAD_WITHOUT_PACKAGE read)}: utils.save_tiny's model of every type,
    prepared for the Hub in its directory, all loaded in one process with the package hidden."""
    root = tmp_path_factory.mktemp("remote-code")
    saved = {name: save_tiny(root / name, name) for name in POSITION_TYPES}
    for name in saved:
        prepare_for_hub(str(root / name), "user/tiny")
    loaded = load_each_without_package([str(root / name) for name in saved], root)
    return {name: (*saved[name], result) for name, result in zip(saved, loaded)}


@pytest.mark.slow
def test_remote_code_loads_and_matches_with_the_package_hidden(loaded_from_directories, position_type):
    model, tokenizer, loaded = loaded_from_directories[position_type]
    assert loaded["module"].startswith("transformers_modules.") and not loaded["package_loaded"]
    assert loaded["tokenizer"] == "TransformerMTTokenizerFast"
    logits, translations = expected_outputs(model, tokenizer)
    torch.testing.assert_close(torch.tensor(loaded["logits"]), logits, rtol=0, atol=1e-6)
    assert loaded["translations"] == translations


TRAINING_INFO = {
    "source_lang": "en",
    "target_lang": "de",
    "data": "en-de",
    "dataset_config_name": None,
    "data_licenses": ["mpl-2.0", "cc-by-sa-3.0"],
    "data_attribution": "the LibreOffice contributors",
    "preset": "main-job",
    "recipe": {"steps": 3131, "learning_rate": 0.002},
}
SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"


def test_model_card_metadata_scores_and_snippet(tmp_path):
    repo_id = "user/tiny-en-de"
    save_tiny(tmp_path, test_results={"test_bleu": 12.345, "test_chrf": 33.3, "test_bleu_signature": SIGNATURE})
    (tmp_path / "training_info.json").write_text(json.dumps(TRAINING_INFO))
    prepare_for_hub(str(tmp_path), repo_id, license="mit")
    card = ModelCard.load(tmp_path / "README.md")
    data = card.data.to_dict()
    assert data["pipeline_tag"] == "translation" and data["library_name"] == "transformers"
    assert data["license"] == "mit" and data["language"] == ["en", "de"] and "custom_code" in data["tags"]
    metrics = data["model-index"][0]["results"][0]["metrics"]
    assert [(m["type"], m["value"]) for m in metrics] == [("bleu", 12.35), ("chrf", 33.3)]
    assert metrics[0]["config"] == SIGNATURE and f"BLEU 12.35 ({SIGNATURE})" in card.text
    assert "licensed mpl-2.0 and cc-by-sa-3.0; attribution: the LibreOffice contributors" in card.text
    assert "preset main-job, steps 3131, learning rate 0.002" in card.text
    snippet = card.text.split("```python\n")[1].split("```")[0]
    compile(snippet, "snippet", "exec")
    assert f'from_pretrained("{repo_id}", trust_remote_code=True)' in snippet
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["auto_map"] == {  # every Auto class the package registers
        "AutoConfig": "configuration_transformer_mt.TransformerMTConfig",
        "AutoModel": "modeling_transformer_mt.TransformerMTModel",
        "AutoModelForSeq2SeqLM": "modeling_transformer_mt.TransformerMTForConditionalGeneration",
        "AutoModelForCausalLM": "modeling_transformer_mt.TransformerMTForCausalLM",
    }
    tokenizer_config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert tokenizer_config["auto_map"]["AutoTokenizer"][1] == "tokenization_transformer_mt.TransformerMTTokenizerFast"


def test_directory_without_weights_is_refused_and_left_untouched(model_dir):
    (model_dir / "model.safetensors").unlink()
    before = sorted(p.name for p in model_dir.iterdir())
    with pytest.raises(FileNotFoundError, match="holds no saved model"):
        prepare_for_hub(str(model_dir))
    assert sorted(p.name for p in model_dir.iterdir()) == before


def push(model_dir: Path, repo_id: str, env: dict, *flags: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(SCRIPTS / "push_to_hub.py"), str(model_dir), repo_id, *flags]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def push_each(pushes: list[tuple], env: dict) -> list[subprocess.CompletedProcess]:
    """push() of every (model directory, repo id, *flags), in turn in one process: a CompletedProcess for each."""
    argv = json.dumps([[str(model_dir), repo_id, *flags] for model_dir, repo_id, *flags in pushes])
    result = subprocess.run(
        [sys.executable, "-c", PUSH_EACH, str(SCRIPTS / "push_to_hub.py"), argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [
        subprocess.CompletedProcess(argv, code, stdout, stderr)
        for code, stdout, stderr in json.loads(result.stdout.splitlines()[-1])
    ]


def other_tokenizer_model(kind: str):
    """(model, tokenizer): a Unigram tokenizer, or separate source/target vocabularies, with a tiny model that says
    a word (an untrained model would end at once, and decoding would not matter)."""
    if kind == "unigram":
        tokenizer = train_tokenizer(SENTENCES * 5, vocab_size=300, tokenizer_type="unigram")
    else:
        tokenizer = train_tokenizer(
            SENTENCES[0::2] * 5,
            vocab_size=280,
            target_texts=SENTENCES[1::2] * 5,
            target_vocab_size=290,
            min_frequency=1,
        )
    target = tokenizer.target_tokenizer or tokenizer
    model = tiny_model(
        vocab_size=len(tokenizer),
        decoder_vocab_size=len(target),
        share_encoder_decoder_embeddings=target is tokenizer,
        use_final_logits_bias=True,
    )
    with torch.no_grad():
        model.final_logits_bias[0, target.convert_tokens_to_ids(target.tokenize(SENTENCES[1])[1])] = 8.0
    return model, tokenizer


OTHER_TOKENIZERS = ["unigram", "separate-vocabularies"]


@pytest.fixture(scope="module")
def pushed_and_loaded(tmp_path_factory, local_hub_environment) -> dict:
    """The Hub round trip of utils.save_tiny's model of every position type (with test results) and of
    other_tokenizer_model's two kinds, each to a repo of its own on one local Hub: every push by
    scripts/push_to_hub.py, in one process, then every load with the package hidden, in one process with a fresh
    HF_HOME. {case: dict(model, tokenizer, push (a CompletedProcess), files (the repo's), loaded, before, after
    (the model directory's files before and after the push))}."""
    root = tmp_path_factory.mktemp("round-trips")
    cases = {}
    for name in POSITION_TYPES:
        model, tokenizer = save_tiny(root / name, name, test_results={"test_bleu": 1.5, "test_chrf": 20.0})
        cases[name] = dict(model=model, tokenizer=tokenizer)
    for kind in OTHER_TOKENIZERS:
        model, tokenizer = other_tokenizer_model(kind)
        model.save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
        cases[kind] = dict(model=model, tokenizer=tokenizer)
    for name, case in cases.items():
        case.update(directory=root / name, repo_id=f"user/tiny-{name}", before=snapshot(root / name))
    with local_hub(root / "hub") as hub:
        pushes = push_each(
            [(case["directory"], case["repo_id"]) for case in cases.values()],
            hub.subprocess_env(hf_home=hub.new_hf_home()),
        )
        for case, result in zip(cases.values(), pushes):
            case["push"] = result
            case["files"] = set(hub.api().list_repo_files(case["repo_id"])) if result.returncode == 0 else set()
        pushed = [name for name, case in cases.items() if case["push"].returncode == 0]
        loaded = load_each_without_package(
            [cases[name]["repo_id"] for name in pushed], root, env=hub.subprocess_env(hf_home=hub.new_hf_home())
        )
    for name, result in zip(pushed, loaded):
        cases[name]["loaded"] = result
    for case in cases.values():
        case["after"] = snapshot(case["directory"])
    return cases


def snapshot(directory: Path) -> dict:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


@pytest.mark.slow
def test_push_then_load_with_the_package_hidden(pushed_and_loaded, position_type):
    case = pushed_and_loaded[position_type]
    assert case["push"].returncode == 0, case["push"].stderr[-3000:]
    assert {
        "config.json",
        "model.safetensors",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "README.md",
        *REMOTE_CODE,
    } <= case["files"]
    loaded = case["loaded"]
    assert not loaded["package_loaded"] and loaded["module"].startswith("transformers_modules.user")
    logits, translations = expected_outputs(case["model"], case["tokenizer"])
    torch.testing.assert_close(torch.tensor(loaded["logits"]), logits, rtol=0, atol=1e-6)
    assert loaded["translations"] == translations
    assert case["after"] == case["before"]  # the push staged its additions elsewhere


@pytest.mark.slow
@pytest.mark.parametrize("kind", OTHER_TOKENIZERS)
def test_other_tokenizers_push_and_load_with_the_package_hidden(pushed_and_loaded, kind):
    """A Unigram tokenizer, and separate source/target vocabularies (target_tokenizer.json), through the Hub."""
    case = pushed_and_loaded[kind]
    assert case["push"].returncode == 0, case["push"].stderr[-3000:]
    assert ("target_tokenizer.json" in case["files"]) == (kind == "separate-vocabularies")
    loaded = case["loaded"]
    assert not loaded["package_loaded"] and loaded["tokenizer"] == "TransformerMTTokenizerFast"
    logits, translations = expected_outputs(case["model"], case["tokenizer"])
    torch.testing.assert_close(torch.tensor(loaded["logits"]), logits, rtol=0, atol=1e-6)
    assert loaded["translations"] == translations and any(translations)


@pytest.mark.slow
def test_second_push_needs_overwrite_then_the_next_load_sees_it(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    save_tiny(first)
    model, tokenizer = save_tiny(second)
    with torch.no_grad():
        model.lm_head.weight.mul_(2.0)  # a visibly different model under the same repo
    model.save_pretrained(second)
    with local_hub(tmp_path / "hub") as hub:
        env = hub.subprocess_env(hf_home=hub.new_hf_home())
        pushed, refused, overwritten = push_each(
            [(first, "user/tiny"), (second, "user/tiny"), (second, "user/tiny", "--overwrite")], env
        )
        assert pushed.returncode == 0
        assert refused.returncode == 2 and "already holds" in refused.stderr and "--overwrite" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert overwritten.returncode == 0
        loaded = load_without_package("user/tiny", tmp_path, env=hub.subprocess_env(hf_home=hub.new_hf_home()))
    logits, _ = expected_outputs(model, tokenizer)
    torch.testing.assert_close(torch.tensor(loaded["logits"]), logits, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_bad_token_invalid_repo_and_missing_weights_are_clear_errors(tmp_path, model_dir):
    before = snapshot(model_dir)
    with local_hub(tmp_path / "hub") as hub:
        env = hub.subprocess_env(hf_home=hub.new_hf_home())
        bad_token = push(model_dir, "user/tiny", dict(env, HF_TOKEN="not-the-token"))
        assert bad_token.returncode == 2 and "401" in bad_token.stderr and "Traceback" not in bad_token.stderr
        assert not hub.api().repo_exists("user/tiny")
        (tmp_path / "empty").mkdir()
        bad_repo, no_weights = push_each([(model_dir, "user/not a repo!"), (tmp_path / "empty", "user/empty")], env)
        assert bad_repo.returncode == 2 and "not a repo!" in bad_repo.stderr and "Traceback" not in bad_repo.stderr
        assert no_weights.returncode == 2 and f"{str(tmp_path / 'empty')!r} holds no saved model" in no_weights.stderr
        assert not hub.api().repo_exists("user/empty")
    assert snapshot(model_dir) == before
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.slow
def test_training_script_push_to_hub(tmp_path, monkeypatch):
    with local_hub(tmp_path / "hub") as hub:
        hub.apply(monkeypatch, hf_home=hub.new_hf_home())
        training.run(
            *training.parse_args(
                [
                    *TINY,
                    "--output_dir",
                    str(tmp_path / "run"),
                    "--do_train",
                    "--do_predict",
                    "--predict_with_generate",
                    "--max_steps",
                    "4",
                    "--save_strategy",
                    "no",
                    "--push_to_hub",
                    "--hub_model_id",
                    "user/trained",
                ]
            )
        )
        files = set(hub.api().list_repo_files("user/trained"))
        card = ModelCard.load(hub.api().hf_hub_download("user/trained", "README.md"))
    assert {"model.safetensors", "tokenizer.json", "modeling_transformer_mt.py", "README.md"} <= files
    assert not any(name.startswith("checkpoint-") or name.endswith(".bin") for name in files)
    assert [m["type"] for m in card.data.to_dict()["model-index"][0]["results"][0]["metrics"]] == ["bleu", "chrf"]


@pytest.mark.slow
def test_only_the_models_files_are_uploaded_and_the_dry_run_lists_exactly_them(tmp_path):
    model_dir = tmp_path / "model"
    save_tiny(model_dir, test_results={"test_bleu": 1.5, "test_chrf": 20.0})
    # what a run directory also holds: secrets, logs, notes, checkpoints, a link to a file elsewhere
    (model_dir / ".env").write_text("HF_TOKEN=hf_secret\n")
    (model_dir / "notes.txt").write_text("private notes\n")
    (model_dir / "wandb").mkdir()
    (model_dir / "wandb" / "run.log").write_text("log\n")
    (model_dir / "checkpoint-5").mkdir()
    (model_dir / "checkpoint-5" / "optimizer.pt").write_bytes(b"state")
    (tmp_path / "elsewhere.txt").write_text("not the model's\n")
    (model_dir / "elsewhere.txt").symlink_to(tmp_path / "elsewhere.txt")
    (model_dir / "LICENSE").write_text("Apache-2.0\n")
    with local_hub(tmp_path / "hub") as hub:
        env = hub.subprocess_env(hf_home=hub.new_hf_home())
        dry = push(model_dir, "user/tiny", env, "--dry_run", "--extra_files", "LICENSE")
        assert dry.returncode == 0, dry.stderr[-3000:]
        listed = {line.strip() for line in dry.stdout.splitlines()[1:]}
        assert not hub.api().repo_exists("user/tiny")  # a dry run uploads nothing
        result = push(model_dir, "user/tiny", env, "--extra_files", "LICENSE")
        assert result.returncode == 0, result.stderr[-3000:]
        uploaded = set(hub.api().list_repo_files("user/tiny")) - {".gitattributes"}
    assert uploaded == listed
    assert {"model.safetensors", "config.json", "tokenizer.json", "README.md", "LICENSE", *REMOTE_CODE} <= uploaded
    assert not uploaded & {".env", "notes.txt", "elsewhere.txt", "test_results.json"}
    assert not any(name.startswith(("wandb", "checkpoint-")) for name in uploaded)


@pytest.mark.slow
def test_a_link_out_of_the_directory_is_refused_before_anything_is_sent(tmp_path, model_dir):
    (tmp_path / "other-tokenizer.json").write_bytes((model_dir / "tokenizer.json").read_bytes())
    (model_dir / "tokenizer.json").unlink()
    (model_dir / "tokenizer.json").symlink_to(tmp_path / "other-tokenizer.json")
    with local_hub(tmp_path / "hub") as hub:
        result = push(model_dir, "user/tiny", hub.subprocess_env(hf_home=hub.new_hf_home()))
        assert not hub.api().repo_exists("user/tiny")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"error: {str(model_dir / 'tokenizer.json')!r} is a link to "
        f"{str(tmp_path / 'other-tokenizer.json')!r}, outside {str(model_dir)!r}; a push "
        "never follows links out of the model directory (copy the file in instead)."
    )


@pytest.mark.slow
def test_an_unreachable_hub_is_one_line(tmp_path, model_dir):
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN="token", HF_HOME=str(tmp_path / "home"))
    result = push(model_dir, "user/tiny", env)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        result.stderr.startswith("error: cannot reach the Hub at http://127.0.0.1:9")
        and len(result.stderr.strip().splitlines()) == 1
    )


def test_the_cards_license_and_languages_come_from_the_data_not_a_default(model_dir):
    prepare_for_hub(str(model_dir), "user/unknown")
    unknown = ModelCard.load(model_dir / "README.md").data.to_dict()
    assert "license" not in unknown and "language" not in unknown  # not known: not claimed
    (model_dir / "training_info.json").write_text(json.dumps(TRAINING_INFO))
    prepare_for_hub(str(model_dir), "user/known")
    known = ModelCard.load(model_dir / "README.md").data.to_dict()
    assert known["license"] == "other" and known["license_name"] == "mpl-2.0 AND cc-by-sa-3.0"
    assert known["language"] == ["en", "de"]
    (model_dir / "training_info.json").write_text(json.dumps(dict(TRAINING_INFO, data_licenses=["cc-by-4.0"])))
    prepare_for_hub(str(model_dir), "user/one")
    assert ModelCard.load(model_dir / "README.md").data.to_dict()["license"] == "cc-by-4.0"


def test_training_records_what_the_card_needs(tmp_path):
    from transformer_mt import training

    from .utils import TINY

    training.run(
        *training.parse_args(
            [*TINY, "--output_dir", str(tmp_path / "run"), "--do_train", "--max_steps", "2", "--save_strategy", "no"]
        )
    )
    info = json.loads((tmp_path / "run" / "training_info.json").read_text())
    assert (info["source_lang"], info["target_lang"], info["data"]) == ("en", "de", "en-de")
    assert info["data_licenses"] == ["mpl-2.0", "cc-by-sa-3.0"]  # from data/en-de/README.md's metadata
    assert "LibreOffice" in info["data_attribution"] and info["preset"] == "tiny"
    assert info["recipe"]["steps"] == 2 and info["recipe"]["batch"] == "16 pairs"
    # the first 200 training pairs (--max_train_samples) by origin, each with its license from the data's card
    origins = [row.split("\t")[2].strip() for row in (DATA / "train.tsv").read_text().splitlines()[1:201]]
    assert [(s["origin"], s["pairs"]) for s in info["data_sources"]] == [
        (origin, origins.count(origin)) for origin in dict.fromkeys(origins)
    ]
    assert all(s["license"].startswith(("MPL-2.0", "CC-BY-SA-3.0")) for s in info["data_sources"])


def test_the_card_lists_every_source_with_its_license(model_dir):
    sources = [
        {"origin": "lohelp", "pairs": 42304, "license": "MPL-2.0", "what": "LibreOffice help"},
        {"origin": "ddtp", "pairs": 36305, "license": None, "what": "Debian package descriptions"},
    ]
    (model_dir / "training_info.json").write_text(json.dumps(dict(TRAINING_INFO, data_sources=sources)))
    prepare_for_hub(str(model_dir), "user/broad")
    text = ModelCard.load(model_dir / "README.md").text
    assert "| lohelp | 42,304 | MPL-2.0 | LibreOffice help |" in text
    assert "| ddtp | 36,305 | not stated | Debian package descriptions |" in text


def test_data_sources_count_origins_and_read_licenses_from_the_corpus_card(tmp_path):
    (tmp_path / "README.md").write_text(
        "# A corpus\n\n| origin | pairs | what | license |\n| --- | ---: | --- | --- |\n"
        "| `docs` | 3 | help pages | MPL-2.0 |\n| dict | 1 | a dictionary | GPL-2+ |\n\nText after.\n"
    )
    pair = tmp_path / "en-de"  # a language pair's directory under the corpus card, as ../shared/data has
    pair.mkdir()
    (pair / "train.tsv").write_text("en\tde\torigin\na\tA\tdocs\nb\tB\tnews\nc\tC\tdocs\nd\tD\tdict\n")
    assert data_sources(str(pair)) == [
        {"origin": "docs", "pairs": 2, "license": "MPL-2.0", "what": "help pages"},
        {"origin": "news", "pairs": 1, "license": None, "what": None},  # the card does not say: not claimed
        {"origin": "dict", "pairs": 1, "license": "GPL-2+", "what": "a dictionary"},
    ]
    assert [s["pairs"] for s in data_sources(str(pair), limit=2)] == [1, 1]
    assert data_sources(str(pair), column="domain") == [] and data_sources("user/hub-dataset") == []
