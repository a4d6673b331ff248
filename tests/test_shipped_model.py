"""The models shipped in models/: transformer-mt-en-de (help text) and transformer-mt-en-de-broad (all of
../shared/data's sources): small, float16 on disk and float32 in memory, they score on the test split what their
scores.json and cards say, the README's examples are the quick start model's own translations, and the broader
model's card names every source it was trained on with its license."""

import json

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, pipeline

from transformer_mt.evaluation import ScoreSettings, evaluate_split
from transformer_mt.hub import sources_markdown
from transformer_mt.tokenization import tokenizer_fingerprint

from .utils import DATA, REPO


MODEL = REPO / "models" / "transformer-mt-en-de"
BROAD = REPO / "models" / "transformer-mt-en-de-broad"
QUICK_START = BROAD  # the README's quick start uses the model stronger on ../shared/data's test split
SHIPPED = pytest.mark.parametrize("model_dir", [MODEL, BROAD], ids=lambda path: path.name)


@SHIPPED
def test_it_is_small_half_precision_on_disk_and_loads_in_float32(model_dir):
    assert (model_dir / "model.safetensors").stat().st_size < 20 * 2**20
    assert {tensor.dtype for tensor in load_file(model_dir / "model.safetensors").values()} == {torch.float16}
    model = AutoModelForSeq2SeqLM.from_pretrained(model_dir)
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}
    assert model.config.tokenizer_fingerprint == tokenizer_fingerprint(AutoTokenizer.from_pretrained(model_dir))
    assert (model.config.source_lang, model.config.target_lang) == ("en", "de")


def test_the_readme_examples_are_its_translations():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme[readme.index("<!-- shipped-model examples -->") :].splitlines()[1:]
    table = lines[: next(i for i, line in enumerate(lines) if not line.startswith("|"))]
    rows = table[2:]  # below the header and the rule
    sources = [row.split(" | ")[0][2:] for row in rows]
    assert len(sources) == 5
    translator = pipeline("translation", model=str(QUICK_START))
    translations = [result["translation_text"] for result in translator(sources)]
    assert rows == [f"| {source} | {translation} |" for source, translation in zip(sources, translations)]


@pytest.mark.slow  # beam search over the 602 test pairs
@SHIPPED
def test_it_scores_what_it_says_on_the_test_split(model_dir):
    recorded = json.loads((model_dir / "scores.json").read_text())
    results = evaluate_split(str(DATA), ScoreSettings(metrics=("bleu", "chrf"), batch_size=32), model=str(model_dir))
    assert results["pairs"] == recorded["pairs"] == 602
    for metric in ("bleu", "chrf"):  # beam 4; another CPU's float rounding may flip a near-tie or two
        assert abs(results["scores"][metric]["score"] - recorded["scores"][metric]["score"]) < 0.3
    assert recorded["scores"]["bleu"]["score"] >= 25
    card = (model_dir / "README.md").read_text(encoding="utf-8")
    assert f"| {recorded['scores']['bleu']['score']:.2f} | {recorded['scores']['chrf']['score']:.2f} |" in card


def test_the_broader_models_card_names_every_source_it_was_trained_on():
    info = json.loads((BROAD / "training_info.json").read_text())
    sources = info["data_sources"]
    assert [source["origin"] for source in sources] == ["lohelp", "ding", "gnomehelp", "ddtp"]
    fine_tuned = info["fine_tunes"][1]["data_sources"]  # the UI fine-tune: the corpus again and 587 packages' UI
    assert {source["origin"] for source in fine_tuned} >= {"lohelp", "ding", "gnomehelp", "ddtp"}
    assert sum(source["origin"].startswith("gettext:") for source in fine_tuned) == 886
    # the formality fine-tunes read the same corpora again (no dictionary): the card's licences cover them
    for stage in info["fine_tunes"][2:]:
        assert all(source["license"] for source in stage["data_sources"])
        assert {source["origin"] for source in stage["data_sources"]} <= {source["origin"] for source in fine_tuned}
    card = (BROAD / "README.md").read_text(encoding="utf-8")
    for listed in (sources, fine_tuned):
        assert all(source["license"] for source in listed)
        for row in sources_markdown(listed):
            assert row in card
    front_matter = card.split("---\n")[1]
    for license in ("mpl-2.0", "gpl-2.0-or-later", "cc-by-sa-3.0", "lgpl-2.1-or-later", "other"):
        assert f"- {license}\n" in front_matter


def test_the_broader_model_keeps_the_help_text_models_score_on_the_repositorys_test_split():
    scores = {
        model_dir: json.loads((model_dir / "scores.json").read_text())["scores"]["bleu"]["score"]
        for model_dir in (MODEL, BROAD)
    }  # each checked against a fresh evaluation above
    assert scores[BROAD] >= scores[MODEL] - 1.0


RESULTS = REPO / "docs" / "results"
# each shipped model's fine-tunes whose scores its card shows before and after: the card's heading, and the results
# before and after (the test split's figures, the shared corpus's per origin, the UI messages')
FINE_TUNES = {
    BROAD: [
        ("## Fine-tuned on UI messages", "broad_ui/old-{}.json", "broad_ui/new-{}.json"),
        ("## Taught the formality tag", "broad_ui/new-{}.json", "en_de_formality/broad-{}.json"),
    ],
    MODEL: [
        ("## Fine-tuned with the augmentations", "help_ui/old-{}.json", "help_ui/new-{}.json"),
        ("## Taught the formality tag", "help_ui/new-{}.json", "en_de_formality/help-{}.json"),
    ],
}
ORIGINS = {
    "lohelp": "LibreOffice help",
    "gnomehelp": "GNOME help",
    "ddtp": "Debian package descriptions",
    "ding": "dictionary entries and examples",
}


def before_after_rows(model_dir, before: str, after: str) -> list[str]:
    """A shipped model's card table of its scores before and after one fine-tune, from docs/results (the help text's
    figures after the formality fine-tune are the model's own scores.json)."""

    def read(pattern: str, name: str) -> dict:
        if pattern.startswith("en_de_formality/") and name == "data-en-de":
            return json.loads((model_dir / "scores.json").read_text(encoding="utf-8"))
        return json.loads((RESULTS / pattern.format(name)).read_text(encoding="utf-8"))

    def cell(scores: dict) -> str:
        return f"{scores['bleu']['score']:.2f} / {scores['chrf']['score']:.2f}"

    rows = []
    for label, name in (
        ("UI messages (`../shared/data/en-de-ui`)", "en-de-ui"),
        ("help text (`data/en-de`)", "data-en-de"),
        ("shared corpus (`../shared/data/en-de`), all origins", "shared-en-de"),
    ):
        old, new = read(before, name), read(after, name)
        rows.append(f"| {label} | {new['pairs']:,} | {cell(old['scores'])} | {cell(new['scores'])} |")
    old, new = read(before, "shared-en-de"), read(after, "shared-en-de")
    for origin, what in ORIGINS.items():
        rows.append(
            f"| {origin} ({what}) | {new['by_origin'][origin]['pairs']:,} | "
            f"{cell(old['by_origin'][origin]['scores'])} | {cell(new['by_origin'][origin]['scores'])} |"
        )
    return rows


@SHIPPED
def test_the_cards_give_the_scores_before_and_after_each_fine_tune(model_dir):
    card = (model_dir / "README.md").read_text(encoding="utf-8")
    for heading, before, after in FINE_TUNES[model_dir]:
        section = card[card.index(f"{heading}\n") :]
        for row in before_after_rows(model_dir, before, after):
            assert row in section, (heading, row)


@SHIPPED
@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_the_command_gives_word_alignments_with_a_calibrated_model(model_dir, engine, tmp_path, capsys):
    """Both shipped models carry a calibration, whose scores the decode asks for: --alignments, which refuses a
    user's --scores, failed on them ("drop --num_return_sequences and --scores") though neither was given."""
    from transformer_mt.scripts import translate as translate_script

    alignments = tmp_path / "out.txt"
    translate_script.main(
        [
            "--model",
            str(model_dir),
            "--engine",
            engine,
            "--alignments",
            str(alignments),
            "--no_progress",
            "Click the Save button.",
        ]
    )
    assert capsys.readouterr().out.strip()
    pairs = [pair.split("-") for pair in alignments.read_text(encoding="utf-8").split()]
    assert pairs and all(len(pair) == 2 and all(part.isdigit() for part in pair) for pair in pairs)


@SHIPPED
@pytest.mark.parametrize("engine", ["transformers", "ctranslate2"])
def test_the_command_takes_a_repetition_penalty_that_reaches_the_search(model_dir, engine, capsys, monkeypatch):
    """--repetition_penalty, which both engines map, is a flag of translate.py and reaches each engine's search."""
    from transformer_mt.engines import load_engine
    from transformer_mt.options import TranslationOptions
    from transformer_mt.scripts import translate as translate_script

    loaded = load_engine(str(model_dir), engine)
    seen = []
    original = type(loaded).translate_sentences

    def spy(self, sentences, options, *args, **kwargs):
        seen.append(options.generate_controls().get("repetition_penalty"))
        return original(self, sentences, options, *args, **kwargs)

    monkeypatch.setattr(type(loaded), "translate_sentences", spy)
    translate_script.main(
        [
            "--model",
            str(model_dir),
            "--engine",
            engine,
            "--repetition_penalty",
            "1.3",
            "--no_progress",
            "Save the file. Save it again.",
        ]
    )
    assert capsys.readouterr().out.strip() and seen and set(seen) == {1.3}
    if engine == "ctranslate2":  # mapped to translate_batch's own keyword
        assert loaded.search_settings(TranslationOptions(repetition_penalty=1.3))["repetition_penalty"] == 1.3
