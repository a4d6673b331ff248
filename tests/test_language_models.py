"""The language pairs' shipped models (issue 52) and what makes them: `experiments.language_models` copies a run in
float16, fills in each origin's licence from ../shared/data's cards, scores the test splits and writes the card from
those files; each shipped model is small, half precision on disk, of its pair, bound to its calibration, and
translates its first UI test pairs as scores.json says."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForSeq2SeqLM

from transformer_mt.data import data_sources
from transformer_mt.evaluation import translator
from transformer_mt.experiments import language_models, model_cards
from transformer_mt.quality import weights_sha256

from .utils import REPO, save_tiny


# each one's models/transformer-mt-<pair> must exist: a missing one fails
SHIPPED_PAIRS = ["de-en", "en-fr", "fr-en", "en-es", "es-en"]


def corpus(root, language="fr"):
    """A ../shared/data-like folder: a help corpus whose card spells `licence`, a UI corpus with licenses.tsv."""
    (root / f"en-{language}").mkdir(parents=True)
    (root / f"en-{language}" / "train.tsv").write_text(f"en\t{language}\torigin\nA\tB\tlohelp\nC\tD\tddtp\n")
    (root / f"en-{language}" / "README.md").write_text(
        "| origin | pairs | what | licence |\n| --- | --- | --- | --- |\n"
        "| lohelp | 1 | LibreOffice help | MPL-2.0 |\n| ddtp | 1 | package descriptions | per package |\n"
    )
    (root / f"en-{language}-ui").mkdir()
    (root / f"en-{language}-ui" / "train.tsv").write_text(
        f"en\t{language}\torigin\tcontext\nE\tF\tgettext:gedit\t\nG\tH\tgettext:orca\tmenu\n"
    )
    (root / f"en-{language}-ui" / "licenses.tsv").write_text(
        "domain\tpackage\tlicense\ngedit\tgedit\tGPL-2+\norca\torca\tLGPL-2.1+\n"
    )
    return root


def test_a_card_spelling_licence_gives_the_licence(tmp_path):
    sources = data_sources(str(corpus(tmp_path) / "en-fr"))
    assert [(s["origin"], s["license"]) for s in sources] == [("lohelp", "MPL-2.0"), ("ddtp", "per package")]


def test_the_runs_sources_get_their_licences_from_the_shared_cards(tmp_path):
    run_sources = [
        {"origin": "lohelp", "pairs": 5},
        {"origin": "gettext:orca", "pairs": 2},
        {"origin": "x", "pairs": 1},
    ]
    filled = language_models.licensed_sources(run_sources, "fr", corpus(tmp_path))
    assert [(s["origin"], s["pairs"], s["license"]) for s in filled] == [
        ("lohelp", 5, "MPL-2.0"),
        ("gettext:orca", 2, "LGPL-2.1+"),
        ("x", 1, None),
    ]
    assert filled[1]["what"] == "the Debian package orca's catalogue"  # no language named: fr's is not German


def test_the_card_licences_are_the_spdx_ids_then_other():
    sources = [
        {"origin": "ddtp", "license": "per package, mostly free licences"},
        {"origin": "gettext:orca", "license": "LGPL-2.1+"},
        {"origin": "lohelp", "license": "MPL-2.0"},
        {"origin": "gnomehelp", "license": "CC-BY-SA-3.0"},
    ]
    assert model_cards.card_licenses(sources) == ["mpl-2.0", "cc-by-sa-3.0", "other"]


@pytest.mark.parametrize("pair", [("en", "en"), ("fr", "de"), ("de", "de")])
def test_a_pair_without_english_or_of_one_language_is_refused(pair):
    with pytest.raises(ValueError, match=f"{pair[0]}-{pair[1]}"):
        language_models.other_language(*pair)


def scored(bleu: float, chrf: float, pairs: int) -> dict:
    return {"data": "d", "split": "test", "pairs": pairs, "scores": {"bleu": {"score": bleu}, "chrf": {"score": chrf}}}


def test_the_card_is_written_from_the_models_files(tmp_path):
    model = tmp_path / "transformer-mt-fr-en"
    save_tiny(model, source_lang="fr", target_lang="en", source_context=True)
    sources = [{"origin": "lohelp", "pairs": 1200, "license": "MPL-2.0", "what": "help"}]
    sources += [{"origin": "gettext:orca", "pairs": 30, "license": "LGPL-2.1+", "what": "orca"}]
    (model / "training_info.json").write_text(json.dumps({"data_sources": sources, "recipe": {"steps": 12000}}))
    calibration = {
        "chrf_threshold": 50,
        "pairs": 3000,
        "fitted_on": "v",
        "measured": {"spearman": 0.5, "precision": {}},
    }
    (model / "calibration.json").write_text(json.dumps(calibration))
    sets = {"ui": scored(28.25, 50.5, 1500), "help": scored(31.0, 55.25, 600), "check": scored(1, 2, 100)}
    sets["by_origin"] = {"lohelp": scored(32.5, 56.0, 554), "ddtp": scored(20.0, 45.0, 900)}
    report = {"sets": sets, "num_beams": 4, "commit": "abc", "gflops": 150.0}
    report |= {"training": {"commit": "def", "command": "train it"}, "command": "ship it"}
    card = model_cards.card(model, report)
    assert (
        "| 1,500 | 28.25 | 50.50 |" in card
        and "| help text (lohelp and gnomehelp of `d`, test) | 600 | 31.00 |" in card
    )
    assert "| ddtp | 900 | 20.00 | 45.00 |" in card
    assert card.startswith("---\nlicense:\n- mpl-2.0\n- other\n") and "language:\n- fr\n- en\n" in card
    assert "A French→English TransformerMT model" in card and "its second segment" in card
    assert "| lohelp | 1,200 | MPL-2.0 | help |" in card and "30 UI messages of 1 gettext catalogues" in card
    assert "train it\nship it\n" in card and "12,000 steps" in card


@dataclasses.dataclass
class FakeCalibration:
    fitted_on: str = ""

    def save(self, directory):
        measured = {"spearman": 0.5, "precision": {}}
        calibration = {"fitted_on": self.fitted_on, "chrf_threshold": 50, "pairs": 3000, "measured": measured}
        (Path(directory) / "calibration.json").write_text(json.dumps(calibration))


FIRST_TRAINING = {"commit": "1895ac9", "command": "train it"}
BEFORE = {"ui": scored(40.12, 60.0, 1500), "help": scored(42.58, 66.11, 600)}
SOURCES = [{"origin": "lohelp", "pairs": 1200, "license": "MPL-2.0", "what": "help"}]
TUNED = {"data_sources": [{"origin": "lohelp", "pairs": 9, "license": None, "what": None}], "data": "mix"}
TUNED |= {"recipe": {"steps": 1500}, "side_constraints": {"formality_share": 1.0}}


def fine_tune_setup(tmp_path, monkeypatch, after=None):
    """A shipped en-fr model, a run that fine-tuned it and its progress JSON; calibration and scoring stubbed
    (`after`: the test sets' scores, or an error scoring raises)."""
    shipped, run = tmp_path / "models" / "transformer-mt-en-fr", tmp_path / "runs" / "formality-fr"
    save_tiny(shipped, source_lang="en", target_lang="fr")
    (shipped / "training_info.json").write_text(json.dumps({"data_sources": SOURCES, "recipe": {"steps": 12000}}))
    scores = {"commit": "4682810", "training": FIRST_TRAINING, "sets": BEFORE}
    (shipped / "scores.json").write_text(json.dumps(scores))
    save_tiny(run, source_lang="en", target_lang="fr")
    (run / "training_info.json").write_text(json.dumps(TUNED))
    results = tmp_path / "results"
    results.mkdir()
    (results / "en-fr-fine-tune-progress.json").write_text(json.dumps({"commit": "37cdfd5", "command": "mix && tune"}))

    def test_scores(*args):
        if isinstance(after, Exception):
            raise after
        return after

    monkeypatch.setattr(language_models, "RESULTS", results)
    monkeypatch.setattr(language_models, "fit", lambda *args, **kwargs: FakeCalibration())
    monkeypatch.setattr(language_models, "test_scores", test_scores)
    return shipped, run


def files(folder):
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def test_a_fine_tune_replaces_its_model_keeping_its_training_record_and_the_scores_before(tmp_path, monkeypatch):
    after = {"ui": scored(40.3, 60.5, 1500), "help": scored(42.0, 66.0, 600), "check": scored(1, 2, 100)}
    after["by_origin"] = {"lohelp": scored(43.0, 67.0, 554)}
    shipped, run = fine_tune_setup(tmp_path, monkeypatch, after)
    first, before, sources, tuned = FIRST_TRAINING, BEFORE, SOURCES, TUNED
    report = language_models.ship(run, "en", "fr", shipped, tmp_path / "data", "ship it", fine_tune_of=shipped)
    assert report["training"] == first  # the model's own training, then its fine-tune
    assert report["fine_tune"] == {
        "commit": "37cdfd5",
        "command": "mix && tune",
        "before": {"commit": "4682810", **{name: before[name]["scores"] for name in ("ui", "help")}},
    }
    info = json.loads((shipped / "training_info.json").read_text())
    assert info["data_sources"] == sources and info["recipe"] == {"steps": 12000}
    assert info["fine_tune"] == {key: tuned[key] for key in ("data", "recipe", "side_constraints")}
    weights = load_file(shipped / "model.safetensors")
    assert {tensor.dtype for tensor in weights.values()} == {torch.float16}
    assert torch.equal(
        weights["model.shared.weight"], load_file(run / "model.safetensors")["model.shared.weight"].half()
    )
    card = (shipped / "README.md").read_text()
    assert "then fine-tuned 1,500 steps on `mix`, every pair addressing the reader tagged" in " ".join(card.split())
    assert "train it\n# fine-tuned from a worktree pinned at 37cdfd5:\nmix\ntune\nship it\n" in card
    assert "| UI messages | 40.12 | 40.30 | 60.00 | 60.50 |\n| help text | 42.58 | 42.00 | 66.11 | 66.00 |" in card


def test_a_fine_tune_that_fails_leaves_the_shipped_model_as_it_was(tmp_path, monkeypatch):
    shipped, run = fine_tune_setup(tmp_path, monkeypatch, after=RuntimeError("scoring failed"))
    kept = files(shipped)
    with pytest.raises(RuntimeError, match="scoring failed"):
        language_models.ship(run, "en", "fr", shipped, tmp_path / "data", "ship it", fine_tune_of=shipped)
    assert files(shipped) == kept


def test_a_fine_tune_is_refused_before_anything_is_written_when_it_cannot_be_recorded(tmp_path, monkeypatch):
    shipped, run = fine_tune_setup(tmp_path, monkeypatch)
    kept = files(shipped)
    progress = language_models.RESULTS / "en-fr-fine-tune-progress.json"
    progress.rename(progress.with_suffix(".gone"))
    with pytest.raises(FileNotFoundError, match="en-fr-fine-tune-progress.json"):
        language_models.ship(run, "en", "fr", shipped, tmp_path / "data", "ship it", fine_tune_of=shipped)
    progress.with_suffix(".gone").rename(progress)
    (shipped / "scores.json").write_text(json.dumps({"data": "data/en-de", "scores": {}}))  # the en->de models' kind
    kept = files(shipped)
    with pytest.raises(ValueError, match="--fine_tune_of .* lacks 'training'"):
        language_models.ship(run, "en", "fr", shipped, tmp_path / "data", "ship it", fine_tune_of=shipped)
    (shipped / "scores.json").write_text(json.dumps({"commit": "a", "training": FIRST_TRAINING, "sets": BEFORE}))
    (shipped / "training_info.json").write_text(json.dumps({"data_sources": SOURCES, "fine_tune": {"data": "x"}}))
    kept = files(shipped)
    with pytest.raises(ValueError, match="is a fine-tune already"):
        language_models.ship(run, "en", "fr", shipped, tmp_path / "data", "ship it", fine_tune_of=shipped)
    assert files(shipped) == kept and not list(shipped.parent.glob("*.new"))


def test_a_fine_tune_without_register_tags_is_described_without_them():
    assert model_cards.fine_tune_clause({"data": "help", "recipe": {"steps": 500}}) == (
        "; then fine-tuned 500 steps on `help`"
    )
    assert model_cards.fine_tune_clause({}) == "" and model_cards.fine_tune_clause({"data": "x"}) == (
        "; then fine-tuned on `x`"
    )


@pytest.mark.parametrize("page", ["docs/languages.md", "README.md"])
def test_the_languages_table_lists_every_shipped_model_as_its_files_say(page):
    text = (REPO / page).read_text(encoding="utf-8")
    table = text[text.index("<!-- languages table -->\n") :].splitlines()[1:]
    table = table[: next(i for i, line in enumerate(table) if not line.startswith("|"))]
    assert table == language_models.languages_table()
    assert len(table) - 2 == len([path for path in (REPO / "models").iterdir() if path.is_dir()])


@pytest.mark.parametrize("pair", SHIPPED_PAIRS)
def test_a_shipped_language_model_is_small_half_precision_of_its_pair_and_calibrated(pair):
    model_dir = REPO / "models" / f"transformer-mt-{pair}"
    assert (model_dir / "model.safetensors").stat().st_size < 20 * 2**20
    assert {tensor.dtype for tensor in load_file(model_dir / "model.safetensors").values()} == {torch.float16}
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}
    assert f"{model.config.source_lang}-{model.config.target_lang}" == pair
    calibration = json.loads((model_dir / "calibration.json").read_text())
    assert calibration["weights_sha256"] == weights_sha256(str(model_dir))
    report = json.loads((model_dir / "scores.json").read_text())
    assert model_cards.card(model_dir, report) == (model_dir / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow  # beam 4 over 100 UI test messages
@pytest.mark.parametrize("pair", SHIPPED_PAIRS)
def test_a_shipped_language_model_translates_its_first_ui_test_pairs_as_it_says(pair):
    model_dir = REPO / "models" / f"transformer-mt-{pair}"
    check = json.loads((model_dir / "scores.json").read_text())["sets"]["check"]
    assert len(check["sources"]) == len(check["hypotheses"]) == check["pairs"] == 100
    hypotheses = translator(str(model_dir), num_beams=4, batch_size=32)(check["sources"])
    differing = [i for i, (a, b) in enumerate(zip(hypotheses, check["hypotheses"])) if a != b]
    assert len(differing) <= 2, differing  # another CPU's float rounding may flip a near-tie or two
