"""Training-time augmentation (transformer_mt.training.augmentation): a share of the training pairs upper-cased,
title-cased or with their shared spans as reserved tokens, drawn from the data seed; the validation and test splits
and a run with every share 0 untouched; a model trained with span tokens says so in its config."""

import dataclasses
import json

import pytest
from transformers import AutoConfig, AutoTokenizer

from transformer_mt import train_tokenizer, training
from transformer_mt.training.augmentation import (
    augment,
    augment_pair,
    augmentation_plan,
    lift_tags,
    side_constraints,
)

from .utils import TINY, train


PAIR = ("Open %s at https://example.com/a in 3 steps.", "Öffnen Sie %s unter https://example.com/a in 3 Schritten.")


def test_case_augmentation_changes_both_sides_and_keeps_placeholders_and_urls():
    assert augment_pair(*PAIR, "uppercase", False) == (
        "OPEN %s AT https://example.com/a IN 3 STEPS.",
        "ÖFFNEN SIE %s UNTER https://example.com/a IN 3 SCHRITTEN.",
        False,
    )
    # OpusTrainer's TitleCase: the first letter of every word on both sides, the rest as written
    assert augment_pair("open the file's KDE menu", "öffnen Sie das KDE-Menü der Datei", "titlecase", False) == (
        "Open The File's KDE Menu",
        "Öffnen Sie Das KDE-Menü Der Datei",
        False,
    )
    assert augment_pair(*PAIR, None, False) == (*PAIR, False)


def test_span_augmentation_masks_the_shared_spans_and_then_the_case_keeps_the_tokens():
    assert augment_pair(*PAIR, None, True) == (
        "Open {0} at {1} in {2} steps.",
        "Öffnen Sie {0} unter {1} in {2} Schritten.",
        True,
    )
    assert augment_pair(*PAIR, "uppercase", True) == (
        "OPEN {0} AT {1} IN {2} STEPS.",
        "ÖFFNEN SIE {0} UNTER {1} IN {2} SCHRITTEN.",
        True,
    )
    # a span one side lacks stays as it is; a pair with no shared span is unchanged and not counted
    assert augment_pair("Save %s in 2 steps.", "%s speichern.", None, True) == (
        "Save {0} in 2 steps.",
        "{0} speichern.",
        True,
    )
    assert augment_pair("Save the file.", "Datei speichern.", None, True) == (
        "Save the file.",
        "Datei speichern.",
        False,
    )


def test_the_seed_decides_which_pairs_and_each_share_draws_apart():
    cases, spans = augmentation_plan(1000, 0.1, 0.2, 0.3, seed=0)
    assert (cases.count("uppercase"), cases.count("titlecase"), sum(spans)) == (112, 186, 305)
    assert augmentation_plan(1000, 0.1, 0.2, 0.3, seed=0) == (cases, spans)  # reproducible, so resumable
    assert augmentation_plan(1000, 0.1, 0.2, 0.3, seed=1) != (cases, spans)
    assert augmentation_plan(1000, 0.5, 0.0, 0.3, seed=0)[1] == spans  # another case share: the same span pairs
    none = augmentation_plan(1000, 0.0, 0.0, 0.0, seed=0)
    assert none == ([None] * 1000, [False] * 1000)


def test_a_share_out_of_range_or_two_case_shares_over_one_are_refused(tmp_path):
    for flags, message in (
        (["--uppercase_share", "1.5"], "--uppercase_share must be in"),
        (["--span_token_share", "-0.1"], "--span_token_share must be in"),
        (["--uppercase_share", "0.6", "--titlecase_share", "0.5"], "together at most 1"),
    ):
        with pytest.raises(ValueError, match=message):
            training.parse_args([*TINY, "--output_dir", str(tmp_path), *flags])


@pytest.fixture(scope="module")
def splits_and_tokenizer(tmp_path_factory):
    """The tiny recipe's arguments, its splits and a small tokenizer."""
    data_args, setup, _, training_args = training.parse_args(
        [*TINY, "--output_dir", str(tmp_path_factory.mktemp("run")), "--do_train", "--do_eval", "--do_predict"]
    )
    datasets = training.load_splits(data_args, training_args, setup)
    tokenizer = train_tokenizer([*datasets["train"]["en"], *datasets["train"]["de"]], vocab_size=1000)
    return data_args, training_args, datasets, tokenizer


def test_only_the_training_split_is_augmented_and_every_share_0_leaves_it_as_it_is(splits_and_tokenizer):
    data_args, training_args, datasets, tokenizer = splits_and_tokenizer
    plain, report = training.preprocess(datasets, tokenizer, data_args, training_args)
    assert "augmented_pairs" not in report
    expected = training.encode_pairs(
        tokenizer, list(datasets["train"]["en"]), list(datasets["train"]["de"]), data_args
    )
    assert plain["train"]["input_ids"] == [
        ids for ids, long in zip(expected["input_ids"], expected["long"]) if not long
    ]

    shares = dataclasses.replace(data_args, uppercase_share=0.3, titlecase_share=0.2, span_token_share=1.0)
    augmented, report = training.preprocess(datasets, tokenizer, shares, training_args)
    assert report["augmented_pairs"] == {"uppercase": 51, "titlecase": 46, "span_tokens": 15}
    for split in ("validation", "test"):
        assert augmented[split]["input_ids"] == plain[split]["input_ids"]
        assert augmented[split]["labels"] == plain[split]["labels"]
    assert augmented["train"]["input_ids"] != plain["train"]["input_ids"]
    unchanged, counts = augment(datasets["train"], "en", "de", {"uppercase": 0, "titlecase": 0, "span_tokens": 0}, 0)
    assert counts == {"uppercase": 0, "titlecase": 0, "span_tokens": 0}
    assert list(unchanged["en"]) == list(datasets["train"]["en"])
    assert list(unchanged["de"]) == list(datasets["train"]["de"])


def test_a_run_with_span_tokens_records_them_in_its_config_and_a_fine_tuned_model_keeps_them(tmp_path):
    first, second = tmp_path / "spans", tmp_path / "fine-tuned"
    train(
        first,
        "--do_train",
        "--max_steps",
        1,
        "--save_strategy",
        "no",
        "--span_token_share",
        1,
        "--uppercase_share",
        0.1,
    )
    assert AutoConfig.from_pretrained(first).span_tokens is True
    info = json.loads((first / "training_info.json").read_text())
    assert info["augmentation"] == {
        "uppercase_share": 0.1,
        "titlecase_share": 0.0,
        "span_token_share": 1.0,
        "term_annotation_share": 0.0,
    }
    assert info["training_pairs"]["augmented_pairs"]["span_tokens"] > 0
    train(second, "--do_train", "--max_steps", 1, "--save_strategy", "no", "--model_name_or_path", first)
    assert AutoConfig.from_pretrained(second).span_tokens is True
    assert json.loads((second / "training_info.json").read_text())["augmentation"]["span_token_share"] == 0.0


def side_constraint_pairs():
    from datasets import Dataset

    return Dataset.from_dict(
        {
            "en": ["Do you want to quit?", "Your file is saved.", "Open the file.", "Can you see it?"] * 25,
            "fr": ["Voulez-vous quitter ?", "Ton fichier est enregistré.", "Ouvrir le fichier.", "Tu le vois ?"] * 25,
            "context": ["menu", "", "verb", ""] * 25,
        }
    )


def test_side_constraints_tag_a_share_of_each_register_and_keep_a_share_of_contexts():
    pairs = side_constraint_pairs()
    tagged, counts = side_constraints(pairs, "en", "fr", 0.5, "context", 0.5, seed=0)
    labels = {"Do you want to quit?": "<formal>", "Your file is saved.": "<informal>", "Can you see it?": "<informal>"}
    for before, after in zip(pairs["en"], tagged["en"]):
        assert after == before or (before in labels and after == f"{labels[before]} {before}")
    assert counts["formal"] == sum(after.startswith("<formal> ") for after in tagged["en"])
    assert counts["informal"] == sum(after.startswith("<informal> ") for after in tagged["en"])
    assert 0 < counts["formal"] < 25 and 0 < counts["informal"] < 50  # a share of each register, not all
    assert "Open the file." in tagged["en"] and not any("<" in after for after in tagged["en"][2::4])  # unlabelled
    kept = [context for context in tagged["context"] if context]
    assert counts["context"] == len(kept) and 0 < len(kept) < 50
    assert all(after in ("", before) for before, after in zip(pairs["context"], tagged["context"]))
    assert list(side_constraints(pairs, "en", "fr", 0.5, "context", 0.5, seed=0)[0]["en"]) == list(tagged["en"])
    assert list(side_constraints(pairs, "en", "fr", 0.0, None, 0.0, seed=0)[0]["en"]) == list(pairs["en"])


def test_a_register_the_data_gives_is_lifted_off_through_augmentation_and_always_tagged():
    from datasets import Dataset

    pairs = Dataset.from_dict(
        {
            "en": ["<informal> Save your file.", "Save your file."] * 20,
            "de": ["Speichere deine Datei.", "Speichern Sie Ihre Datei."] * 20,
        }
    )
    lifted = lift_tags(pairs, "en")
    assert lifted["en"] == ["Save your file."] * 40
    upper, _ = augment(lifted, "en", "de", {"uppercase": 0.5, "titlecase": 0.0, "span_tokens": 0.0}, seed=0)
    tagged, counts = side_constraints(upper, "en", "de", 0.25, None, 0.0, seed=0)
    # every rewrite keeps its own tag, whole, after the case augmentation; a share of the others is tagged
    assert set(tagged["en"][::2]) == {"<informal> SAVE YOUR FILE.", "<informal> Save your file."}
    assert counts["informal"] == 20 and 0 < counts["formal"] < 20
    assert lift_tags(side_constraint_pairs(), "en") is not None  # untagged data: as it is
    assert lift_tags(side_constraint_pairs(), "en")["en"] == side_constraint_pairs()["en"]


def test_a_context_is_the_sources_second_segment_and_left_out_when_it_does_not_fit(splits_and_tokenizer):
    data_args, _, _, tokenizer = splits_and_tokenizer
    sources, contexts = ["Open the file.", "Open the file."], ["menu action", ""]
    features = training.encode_pairs(tokenizer, sources, ["Datei öffnen."] * 2, data_args, contexts=contexts)
    alone, paired = tokenizer("Open the file."), tokenizer("Open the file.", "menu action")
    assert features["input_ids"] == [paired["input_ids"], alone["input_ids"]]
    assert features["token_type_ids"][0] == [0] * len(alone["input_ids"]) + [1] * (
        len(paired["input_ids"]) - len(alone["input_ids"])
    )
    assert set(features["token_type_ids"][1]) == {0}
    short = dataclasses.replace(data_args, max_source_length=len(alone["input_ids"]) + 1)
    cut = training.encode_pairs(tokenizer, sources[:1], ["Datei öffnen."], short, contexts=contexts[:1])
    assert cut["input_ids"] == [alone["input_ids"]] and cut["long"] == [False]


def test_a_run_with_context_and_formality_records_them_and_holds_the_tags(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    pairs = side_constraint_pairs()
    for split in ("train", "validation"):
        pairs.to_csv(data / f"{split}.tsv", sep="\t", index=False)
    run = tmp_path / "run"
    train(
        run,
        "--do_train",
        "--max_steps",
        1,
        "--save_strategy",
        "no",
        "--data",
        data,
        "--target_lang",
        "fr",
        "--context_column",
        "context",
        "--context_share",
        0.5,
        "--formality_share",
        0.5,
        "--do_predict",
        "false",
        "--do_eval",
        "false",
    )
    config = AutoConfig.from_pretrained(run)
    assert config.source_context is True and config.formality_tags is True
    assert {"<formal>", "<informal>"} <= set(AutoTokenizer.from_pretrained(run).get_vocab())
    info = json.loads((run / "training_info.json").read_text())
    assert info["side_constraints"] == {"context_column": "context", "context_share": 0.5, "formality_share": 0.5}
    assert info["training_pairs"]["side_constraints"]["context"] > 0
    # data that gives registers (`language_data --informal_rewrites`) needs a run that reads the tags
    tagged = pairs.map(lambda row: {"en": f"<informal> {row['en']}" if "Tu " in row["fr"] else row["en"]})
    tagged.to_csv(data / "train.tsv", sep="\t", index=False)
    with pytest.raises(ValueError, match="--formality_share 0: the training split's sources begin with register tags"):
        train(tmp_path / "untagged", "--do_train", "--max_steps", 1, "--data", data, "--target_lang", "fr")


def test_side_constraint_flags_are_checked_at_the_boundary():
    with pytest.raises(
        ValueError,
        match="--context_share 0.5 keeps the contexts of --context_column: name a column of its own, got None",
    ):
        training.parse_args([*TINY, "--output_dir", "x", "--context_share", "0.5"])
    with pytest.raises(ValueError, match="--formality_share: the target language 'en' has no registers"):
        training.parse_args(
            [*TINY, "--output_dir", "x", "--source_lang", "de", "--target_lang", "en", "--formality_share", "0.5"]
        )
