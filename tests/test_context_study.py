"""The context study's pieces, each exact on given numbers (the ambiguous-message finder, the match rule, McNemar's
exact p, the verdict, the register shares, the paired difference), its parts on a translator whose outputs are
given, and the command end to end on a tiny model trained with context and register tags, on both engines."""

import json
from pathlib import Path

import pytest
import torch

from transformer_mt.evaluation import compare_systems
from transformer_mt.experiments import context_study as study
from transformer_mt.experiments.context_study import Message
from transformer_mt.options import OptionError

from .utils import copy_tokenizer, require, train_copy_model


MESSAGES = [
    Message("Open", "Ouvrir", "@action:button", split="validation"),
    Message("Open", "Ouvert", "@info:status", split="validation"),
    Message("Save", "Enregistrer", "@action", split="validation"),
    Message("Print", "Imprimer", split="validation"),
    Message("Open", "Ouvrir", split="test"),
    Message("Home", "Dossier personnel", "folder", split="test"),
    Message("Home", "Accueil", "web page", split="test"),
    Message("Save", " enregistrer", split="test"),  # the same translation by the match rule: not ambiguous
    Message("Print", "Impression", split="test"),  # another translation, but under the same (no) context
    Message("Do you want to quit?", "Voulez-vous quitter ?", split="test"),
    Message("Are you sure?", "Es-tu sûr ?", split="test"),
    Message("Quit", "Quitter", split="test"),
]
# what the given translator writes for (English, context)
OUTPUTS = {
    ("Open", "@action:button"): "Ouvrir",
    ("Open", "@info:status"): "ouvert",  # a match: casefolded
    ("Open", None): "Ouvrir",
    ("Home", "folder"): "Dossier  personnel",  # a match: whitespace collapsed
    ("Home", "web page"): "Page d'accueil",
    ("Home", None): "Accueil",
}


def given_translator(refuse_tags: bool = False, calls: list | None = None):
    """A translator (`translate(texts, contexts, formality)`) whose outputs are OUTPUTS, the source itself
    elsewhere; for `more`/`less` a formal/informal address of the reader (or, `refuse_tags`, an OptionError as a
    model without the tags gives)."""

    def translate(texts, contexts, formality="default"):
        if calls is not None:
            calls.append((list(texts), list(contexts), formality))
        if formality in ("more", "less") and refuse_tags:
            raise OptionError("formality", f"{formality!r} needs a model trained with the register tags")
        if formality == "more":
            return ["Voulez-vous quitter ?" for _ in texts]
        if formality == "less":
            return ["Veux-tu quitter ?" if "quit" in text else "Quitter" for text in texts]
        return [OUTPUTS.get((text, context), text) for text, context in zip(texts, contexts)]

    return translate


def test_the_match_rule_is_nfc_casefold_and_collapsed_whitespace():
    assert study.matches("  Ouvrir\tle  FICHIER ", "ouvrir le fichier")
    assert study.matches("Cafe\u0301", "café")  # decomposed and composed é
    assert not study.matches("Afficher l'historique", "Afficher l’historique")  # another apostrophe
    assert not study.matches("Ouvrir le fichier.", "Ouvrir le fichier")


def test_the_finder_returns_exactly_the_english_translated_differently_under_different_contexts():
    found = study.ambiguous(MESSAGES)
    assert list(found) == ["Open", "Home"]
    assert found["Open"] == [MESSAGES[0], MESSAGES[1], MESSAGES[4]]  # every message of the text, the empty context too
    assert found["Home"] == [MESSAGES[5], MESSAGES[6]]


def test_a_corpus_is_read_with_its_context_or_none(tmp_path):
    with_context = tmp_path / "test.tsv"
    with_context.write_text(
        'en\tfr\torigin\tcontext\nOpen\tOuvrir\tgettext:a\t@action\n"Home"\t« Accueil »\tgettext:b\t\n',
        encoding="utf-8",
    )
    assert study.read_messages(with_context, "fr", "test") == [
        Message("Open", "Ouvrir", "@action", "gettext:a", "test"),
        Message('"Home"', "« Accueil »", "", "gettext:b", "test"),  # quotes kept: tabs only, no quoting
    ]
    without = tmp_path / "help.tsv"
    without.write_text("en\tde\nOpen the file.\tDatei öffnen.\n", encoding="utf-8")
    assert study.read_messages(without, "de") == [Message("Open the file.", "Datei öffnen.")]


@pytest.mark.parametrize(
    "only_with, only_without, p",
    [
        (0, 0, 1.0),
        (6, 0, 2 / 64),  # 2 * (1/2)^6
        (0, 6, 2 / 64),
        (8, 1, 2 * (1 + 9) / 512),
        (10, 2, 2 * (1 + 12 + 66) / 4096),
        (5, 5, 1.0),  # capped at 1
        (3, 4, 1.0),
    ],
)
def test_mcnemar_is_the_exact_binomial_on_the_discordant_pairs(only_with, only_without, p):
    assert study.mcnemar_exact(only_with, only_without) == pytest.approx(p, rel=1e-12)


def test_paired_counts():
    assert study.paired_counts([True, True, False, False, True], [True, False, True, False, False]) == {
        "both": 1,
        "only_with_context": 2,
        "only_without_context": 1,
        "neither": 1,
    }


@pytest.mark.parametrize(
    "p_value, mean, expected",
    [
        (0.01, -0.2, "significant loss"),
        (0.01, 0.5, "no significant loss"),  # a significant gain
        (0.2, -0.29, "no significant loss"),
        (0.2, -0.3, "no significant loss"),  # the margin itself is allowed
        (0.2, -0.31, "mean loss beyond 0.3"),
        (0.05, -0.1, "no significant loss"),  # p must be below alpha
        (0.049, -0.01, "significant loss"),
    ],
)
def test_the_verdict_rule(p_value, mean, expected):
    assert study.verdict(p_value, mean) == expected


def test_register_shares_count_outputs_in_the_asked_register_the_other_and_none():
    sources = ["Do you want to save?"] * 4 + ["Save"]
    outputs = ["Voulez-vous enregistrer ?", "Veux-tu enregistrer ?", "Enregistrer ?", "Vous tu", "Vous"]
    found = study.register_shares(sources, outputs, "fr", ["formal"] * 5)
    # "Vous tu": both registers' words, so none; "Save" addresses no one, so none
    assert found == {
        "sentences": 5,
        "formal": 1,
        "informal": 1,
        "in_asked": 1,
        "in_other": 1,
        "in_none": 3,
        "share_in_asked": 0.2,
        "share_in_other": 0.2,
        "share_in_none": 0.6,
    }
    per_sentence = study.register_shares(sources[:2], outputs[:2], "fr", ["informal", "informal"])
    assert (per_sentence["in_asked"], per_sentence["in_other"]) == (1, 1)


def test_disambiguation_on_given_outputs():
    found = study.disambiguation(MESSAGES, given_translator())
    # Open/@action:button both, Open/@info:status only with, Open/"" both, Home/folder only with, Home/web page
    # only without
    assert (found["texts"], found["messages"], found["messages_with_context"], found["measured"]) == (2, 5, 4, 5)
    assert found["paired"] == {"both": 2, "only_with_context": 2, "only_without_context": 1, "neither": 0}
    assert (found["match_rate_with_context"], found["match_rate_without_context"]) == (0.8, 0.6)
    assert found["mcnemar_exact_p"] == 1.0 and found["rule"] == study.MATCH_RULE
    assert [row["with"] for row in found["rows"]] == [
        "Ouvrir",
        "ouvert",
        "Ouvrir",
        "Dossier  personnel",
        "Page d'accueil",
    ]
    assert study.disambiguation(MESSAGES, given_translator(), limit=2)["measured"] == 2
    none = study.disambiguation([m for m in MESSAGES if m.source != "Open" and m.source != "Home"], given_translator())
    assert none["texts"] == 0 and "note" in none and "paired" not in none


def test_formality_on_given_outputs_and_a_model_that_refuses_the_tags():
    test = [m for m in MESSAGES if m.split == "test"]
    found = study.formality({"test": test}, "fr", given_translator())["test"]
    assert found["sentences"] == 2 and found["references"] == {"formal": 1, "informal": 1}
    assert (found["more"]["in_asked"], found["more"]["in_other"], found["more"]["in_none"]) == (2, 0, 0)
    assert (found["less"]["in_asked"], found["less"]["in_other"]) == (1, 0) and found["less"]["in_none"] == 1
    # default: the outputs are the sources (no address), measured against each reference's register
    assert found["default"]["in_none"] == 2 and "note" not in found
    refused = study.formality({"test": test}, "fr", given_translator(refuse_tags=True))["test"]
    assert "register tags" in refused["more"]["refused"] and "refused" in refused["less"]
    assert refused["default"]["sentences"] == 2 and "only default measured" in refused["note"]
    assert "note" in study.formality({"test": test}, "ja", given_translator())


def test_the_whole_split_with_and_without_context():
    rows = [m for m in MESSAGES if m.split == "test"]
    calls = []
    found = study.whole_split(rows, given_translator(calls=calls), samples=200)
    assert (found["rows"], found["rows_with_context"]) == (8, 2)
    assert [contexts for _, contexts, _ in calls] == [[None] * 8, [m.context or None for m in rows]]
    bleu = found["bleu"]
    assert bleu["with_context"] > bleu["without_context"]  # Home/folder matches only with its context
    assert found["verdict"] == study.verdict(bleu["p_value"], bleu["mean_difference"])
    assert bleu["ci95"][0] <= bleu["mean_difference"] <= bleu["ci95"][1]
    plain = study.whole_split([m for m in rows if not m.context], given_translator())
    assert plain["rows_with_context"] == 0 and "note" in plain and "verdict" not in plain


def test_the_paired_difference_uses_sacrebleus_resamples():
    references = [f"Le fichier {n} est ouvert dans la fenêtre." for n in range(30)]
    baseline = [f"Le fichier {n} est ouvert." if n % 2 else reference for n, reference in enumerate(references)]
    system = [f"Le fichier {n} ouvert dans la fenêtre." if n % 5 == 0 else r for n, r in enumerate(references)]
    compared = compare_systems({"baseline": baseline, "system": system}, references, ("bleu", "chrf"), "bs", 300)
    for metric in ("bleu", "chrf"):
        found = study.paired_difference(baseline, system, references, metric, 300)
        means = compared["metrics"][metric]["systems"]
        # the same resamples as sacreBLEU's test: the mean difference is the difference of its means
        assert found["mean_difference"] == pytest.approx(means["system"]["mean"] - means["baseline"]["mean"], abs=0.02)
        assert 0 < found["ci95"][0] <= found["mean_difference"] <= found["ci95"][1]
    same = study.paired_difference(system, system, references, "bleu", 100)
    assert same == {"mean_difference": 0.0, "ci95": [0.0, 0.0]}


def test_each_text_context_and_register_is_translated_once(monkeypatch):
    calls = []

    def translate_texts(engine, texts, options):
        calls.append((list(texts), options.context, options.formality, options.num_beams))
        return [[(f"{text}|{options.context}|{options.formality}", None)] for text in texts]

    monkeypatch.setattr(study, "translate_texts", translate_texts)
    translate = study.Translations(engine=None)
    assert translate(["a", "b", "a"], ["x", "", "x"]) == ["a|x|default", "b|None|default", "a|x|default"]
    assert translate(["b", "c"], [None, "x"], "more") == ["b|None|more", "c|x|more"]
    assert translate(["a", "b"], ["x", None]) == ["a|x|default", "b|None|default"]  # decoded already
    assert calls == [
        (["a"], "x", "default", 4),
        (["b"], None, "default", 4),
        (["b"], None, "more", 4),
        (["c"], "x", "more", 4),
    ]


def tiny_model(directory, tags: bool):
    """A copy-trained tiny en->fr model saved as trained with context (and, `tags`, the register tags), its segment-1
    vector made to matter, outputs of at most a few tokens (a quick decode), beam 4 as CTranslate2 takes it."""
    tokenizer = copy_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<formal>", "<informal>"]})
    model = train_copy_model(tokenizer, source_context=True, formality_tags=tags)
    with torch.no_grad():
        model.model.encoder.embeddings.token_type_embeddings.weight[1].normal_(std=1.0)
    model.config.source_lang, model.config.target_lang = "en", "fr"
    model.generation_config.update(num_beams=4, early_stopping=True, max_length=8)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def write_corpus(folder):
    folder.mkdir()
    header = "en\tfr\torigin\tcontext\n"
    lines = [f"{m.source}\t{m.reference}\tgettext:toy\t{m.context}\n" for m in MESSAGES]
    (folder / "validation.tsv").write_text(header + "".join(lines[:4]), encoding="utf-8")
    (folder / "test.tsv").write_text(header + "".join(lines[4:]), encoding="utf-8")
    return str(folder)


@pytest.mark.slow
def test_the_study_runs_end_to_end_on_both_engines(tmp_path, monkeypatch):
    require("ctranslate2", "the study's second engine: pip install 'transformer-mt[fast]'")
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))
    model, untagged = tiny_model(tmp_path / "tagged", True), tiny_model(tmp_path / "untagged", False)
    data, output = write_corpus(tmp_path / "data"), tmp_path / "out" / "result.json"
    arguments = ["--model", model, "--data", data, "--engine", "generate", "ctranslate2", "--baseline", untagged]
    study.main([*arguments, "--paired_samples", "100", "--output", str(output)])
    result = json.loads(output.read_text(encoding="utf-8"))
    assert result["commit"] and result["matmul_gflops"] > 0 and "--baseline" in result["command"]
    assert list(result["engines"]) == ["generate", "ctranslate2"] and result["target_lang"] == "fr"
    for name, run in result["engines"].items():
        assert run["engine"] == name and run["source_context"] and run["formality_tags"]
        found = run["context_disambiguation"]
        assert (found["texts"], found["messages"], found["measured"]) == (2, 5, 5)
        assert sum(found["paired"].values()) == 5
        assert (run["test_split"]["rows"], run["test_split"]["rows_with_context"]) == (8, 2)
        assert run["formality"]["ui_test"]["sentences"] == 2
        assert all(run["formality"]["ui_test"][asked]["sentences"] == 2 for asked in ("more", "less", "default"))
        assert run["against_baseline"]["verdict"] in (
            "no significant loss",
            "significant loss",
            "mean loss beyond 0.3",
        )
    with pytest.raises(SystemExit):  # results never replace a file
        study.main([*arguments, "--output", str(output)])
    study.main(["--model", untagged, "--data", data, "--limit", "1", "--output", str(tmp_path / "untagged.json")])
    run = json.loads((tmp_path / "untagged.json").read_text(encoding="utf-8"))["engines"]["generate"]
    assert "register tags" in run["formality"]["ui_test"]["more"]["refused"] and run["formality"]["ui_test"]["note"]
    assert run["context_disambiguation"]["measured"] == 1 and run["formality"]["ui_test"]["default"]["sentences"] == 1


def test_an_en_x_corpus_is_read_the_other_way_for_a_model_into_english(tmp_path):
    folder = Path(write_corpus(tmp_path / "data"))
    into_english = study.read_messages(folder / "test.tsv", "en", "test", source_lang="fr")
    from_english = study.read_messages(folder / "test.tsv", "fr", "test")
    assert [(m.source, m.reference) for m in into_english] == [(m.reference, m.source) for m in from_english]
    assert [m.context for m in into_english] == [m.context for m in MESSAGES[4:]]
    # ambiguity is the source side's: one English "Home" under two contexts, but two French texts
    assert list(study.ambiguous(from_english)) == ["Home"] and study.ambiguous(into_english) == {}
