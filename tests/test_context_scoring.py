"""Pair scores and word alignments read the source as translation does (issue 52): a model trained with context and
register tags scores a pair with its tag first and its context as segment 1, on generate() and CTranslate2 alike;
its alignments come from the forward pass with the context, which no target word is aligned to."""

import bisect
import copy
import logging
import re

import pytest
import torch

from transformer_mt.diagnostics import alignment_heads, eager_attention
from transformer_mt.engines import GenerateEngine, load_engine
from transformer_mt.engines.alignment import token_words
from transformer_mt.options import TranslationOptions
from transformer_mt.tokenization import target_side

from .utils import copy_tokenizer, require, save_context_model


require("ctranslate2", "the fast engine needs ctranslate2: pip install 'transformer-mt[fast]'")

# the copy model's sources and targets: its own copies and others, the context sharing words with the sentences
SOURCES = ["Open the file.", "Click the Save button.", "Select the rows that you want to delete.", "Close the window."]
TARGETS = ["Open the file.", "Klicken Sie auf Speichern.", "Select the rows to delete.", "Schließen Sie das Fenster."]
CONTEXT = "Menu of the file dialog: open, save or close the window"
TAG = "<formal>"
READ = TranslationOptions(context=CONTEXT, formality="more")  # the tag first, the context as segment 1
EXPORTED = ["sinusoidal", "learned", "rotary"]  # ALiBi cannot be exported to CTranslate2


@pytest.fixture(scope="module", params=EXPORTED)
def saved(request, tmp_path_factory):
    """A copy-trained tiny model of `request.param` positions saved as trained with context and register tags, its
    segment-1 vector made to matter, greedy; with its (model, tokenizer) as saved."""
    directory = tmp_path_factory.mktemp(f"context-{request.param}") / "model"
    tokenizer = copy_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<formal>", "<informal>"]})
    model, tokenizer = save_context_model(
        directory, tokenizer, position_embedding_type=request.param, formality_tags=True
    )
    return directory, model, tokenizer


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_MT_CACHE", str(tmp_path / "cache"))


def by_hand(model, tokenizer, source: str, target: str, context: str | None, segments: bool = True) -> float:
    """The target's summed log-probability from one forward pass over `TAG source` (and `context`, as segment 1
    unless not `segments`)."""
    source = tokenizer(f"{TAG} {source}", context, return_token_type_ids=True, return_tensors="pt")
    if not segments:
        source["token_type_ids"] = torch.zeros_like(source["token_type_ids"])
    labels = tokenizer(text_target=target, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        logits = model(**source, labels=labels).logits
    return float(logits.float().log_softmax(-1).gather(-1, labels[..., None])[..., 0].sum())


def test_a_pair_is_scored_with_its_tag_and_context_as_translation_reads_them(saved):
    _, model, tokenizer = saved
    engine = GenerateEngine(model, tokenizer)
    scored = engine.score_pairs(SOURCES, TARGETS, batch_size=1, options=READ)
    expected = [by_hand(model, tokenizer, source, target, CONTEXT) for source, target in zip(SOURCES, TARGETS)]
    assert [pair.log_prob for pair in scored] == expected  # exact: the same rows, the same forward pass
    assert [pair.tokens for pair in scored] == [len(tokenizer(text_target=t)["input_ids"]) for t in TARGETS]
    # the context and its segment matter, so a score read without them could not pass for this one
    alone = engine.score_pairs(SOURCES, TARGETS, batch_size=1, options=TranslationOptions(formality="more"))
    assert [pair.log_prob for pair in alone] == [
        by_hand(model, tokenizer, source, target, None) for source, target in zip(SOURCES, TARGETS)
    ]
    unsegmented = [
        by_hand(model, tokenizer, source, target, CONTEXT, segments=False) for source, target in zip(SOURCES, TARGETS)
    ]
    for found, without, flat in zip(expected, [pair.log_prob for pair in alone], unsegmented):
        assert abs(found - without) > 1e-2 and abs(found - flat) > 1e-2
    # in length batches, padded (segments too): the same within float noise
    batched = engine.score_pairs(SOURCES, TARGETS, batch_size=3, options=READ)
    assert [pair.log_prob for pair in batched] == pytest.approx(expected, abs=1e-5)


def test_a_model_trained_without_context_scores_without_it_and_says_so_once(saved, caplog):
    _, model, tokenizer = saved
    plain = copy.deepcopy(model)
    plain.config.source_context = False
    engine = GenerateEngine(plain, tokenizer)
    with caplog.at_level(logging.WARNING):
        scored = engine.score_pairs(SOURCES, TARGETS, batch_size=1, options=READ)
    assert caplog.text.count("not trained with context") == 1
    assert [pair.log_prob for pair in scored] == [
        by_hand(model, tokenizer, source, target, None) for source, target in zip(SOURCES, TARGETS)
    ]


def test_both_engines_score_a_pair_with_its_context_alike(saved, cache):
    directory, _, _ = saved
    generate, ctranslate2 = (load_engine(str(directory), name) for name in ("transformers", "ctranslate2"))
    fast = {}
    for options in (READ, TranslationOptions(context=CONTEXT), TranslationOptions(formality="more")):
        expected = generate.score_pairs(SOURCES, TARGETS, batch_size=2, options=options)
        fast[options] = ctranslate2.score_pairs(SOURCES, TARGETS, batch_size=2, options=options)
        assert [pair.tokens for pair in fast[options]] == [pair.tokens for pair in expected]
        assert [pair.log_prob for pair in fast[options]] == pytest.approx(
            [pair.log_prob for pair in expected], abs=1e-3
        )
    for found, alone in zip(fast[READ], fast[TranslationOptions(formality="more")]):  # the context read, or not
        assert abs(found.log_prob - alone.log_prob) > 1e-2


def sentence_columns(tokenizer, source: str) -> dict[int, int]:
    """Column -> word of `source` for each token of the row `TAG source </s> CONTEXT </s>` that holds characters of
    the sentence itself (never the tag, a separator or the context)."""
    row = tokenizer(f"{TAG} {source}", CONTEXT, return_offsets_mapping=True, return_token_type_ids=True)
    shift, starts = len(TAG) + 1, [match.start() for match in re.finditer(r"\S+", source)]
    columns = {}
    for column, ((start, end), segment) in enumerate(zip(row["offset_mapping"], row["token_type_ids"])):
        text = f"{TAG} {source}"[start:end]
        if segment == 0 and start >= shift and text.strip():
            columns[column] = bisect.bisect_right(starts, start - shift + len(text) - len(text.lstrip())) - 1
    return columns


def aligned_by_hand(model, tokenizer, source: str, target: str) -> tuple[list[tuple[int, int]], bool]:
    """The alignment from one forward pass over the row with its context, its attention restricted to the
    sentence's own columns; and whether, unrestricted, some target word's token would have attended most to a
    column outside them (the context, the tag)."""
    row = tokenizer(f"{TAG} {source}", CONTEXT, return_token_type_ids=True, return_tensors="pt")
    target_side_tokenizer = target_side(tokenizer)
    labels = target_side_tokenizer(target, return_offsets_mapping=True)
    layer, heads = alignment_heads(model.config)
    with eager_attention(model), torch.inference_mode():
        outputs = model(**row, labels=torch.tensor([labels["input_ids"]]), output_attentions=True)
    attention = outputs.cross_attentions[layer][0, :heads].float().mean(0)  # (target, source)
    columns = sentence_columns(tokenizer, source)
    target_words = token_words(target, labels["offset_mapping"])
    kept = sorted(columns)
    pairs, elsewhere = set(), False
    for t, word in enumerate(target_words):
        if word is None:
            continue
        pairs.add((columns[kept[int(attention[t, kept].argmax())]], word))
        elsewhere |= int(attention[t].argmax()) not in columns
    return sorted(pairs), elsewhere


def test_alignments_read_the_context_and_never_point_into_it(saved, cache):
    directory, model, tokenizer = saved
    generate = GenerateEngine(model, tokenizer)
    aligned = generate.align_pairs(SOURCES, TARGETS, READ)
    by_hand_found = [aligned_by_hand(model, tokenizer, source, target) for source, target in zip(SOURCES, TARGETS)]
    assert aligned == [pairs for pairs, _ in by_hand_found]
    assert any(elsewhere for _, elsewhere in by_hand_found)  # unmasked, the context would have drawn some words
    for alignment, source in zip(aligned, SOURCES):
        assert alignment and all(0 <= i < len(source.split()) for i, _ in alignment)
    fast = load_engine(str(directory), "ctranslate2")
    assert fast.align_pairs(SOURCES, TARGETS, READ) == aligned


def test_the_term_step_scores_what_it_forced_in_under_the_options_it_decoded_with():
    """A glossary term forced in is chosen by `score_pairs` among the translations it was decoded into: scored with
    the same context and register (so the source rows are translation's), never without them."""
    from transformer_mt.translation import translate_texts

    from .test_glossary import ForcingEngine

    class Recording(ForcingEngine):
        def score_pairs(self, sources, targets, batch_size=16, length_penalty=None, options=None):
            self.scored_with = options
            return super().score_pairs(sources, targets, batch_size, length_penalty, options)

    engine = Recording()
    asked = TranslationOptions(glossary={"Save": "Sichern"}, context=CONTEXT, formality="prefer_more")
    [text] = translate_texts(engine, ["Click Save now."], asked)
    assert text.flags.terms_forced == ("Sichern",)
    assert (engine.scored_with.context, engine.scored_with.formality) == (CONTEXT, "prefer_more")
