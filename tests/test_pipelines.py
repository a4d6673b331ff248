"""pipeline("translation") (transformer_mt.pipelines): generate() and decode per string, or the batch API's
sentence splitting; the batch API lives in transformer_mt.translation, not here."""

import pytest
import torch
from transformers import pipeline

from transformer_mt import TranslationPipeline

from .test_translation import SHIPPED, THREE, THREE_ALONE, THREE_WHOLE
from .utils import SENTENCES, save_tiny


def test_translation_pipeline_equals_generate_and_decode(short_translator):
    path, model, tokenizer = short_translator
    translator = pipeline("translation", model=str(path))
    assert isinstance(translator, TranslationPipeline)
    expected = []
    for sentence in SENTENCES[::2]:
        ids = model.generate(**tokenizer(sentence, return_tensors="pt"))
        assert ids.shape[1] <= 8  # the saved generation config (beam 2, max_length 8) is used
        expected.append({"translation_text": tokenizer.decode(ids[0], skip_special_tokens=True).strip()})
    # guards=False: this untrained model loops, and the guards would decode a loop again (tests/test_quality.py)
    assert translator(SENTENCES[::2], guards=False) == expected
    assert translator(SENTENCES[0], guards=False) == expected[:1]


def test_generation_parameters_pass_through(short_translator):
    path, _, _ = short_translator
    translator = pipeline("translation", model=str(path))
    results = translator(SENTENCES[:2], num_beams=3, num_return_sequences=3, max_new_tokens=4)
    assert [len(r) for r in results] == [3, 3]
    torch.manual_seed(0)
    assert len(translator(SENTENCES[0], do_sample=True, num_return_sequences=2)) == 2


def test_non_string_input_is_rejected(short_translator):
    translator = pipeline("translation", model=str(short_translator[0]))
    with pytest.raises(ValueError, match="translates strings, got int"):
        translator(42)


def test_the_pipeline_splits_unless_told_not_to():
    translator = pipeline("translation", model=str(SHIPPED))
    assert translator([THREE, "Choose Options."]) == [
        {"translation_text": " ".join(THREE_ALONE)},
        {"translation_text": THREE_ALONE[1]},
    ]
    assert translator(THREE) == [{"translation_text": " ".join(THREE_ALONE)}]
    assert translator(THREE, split_sentences=False) == [{"translation_text": THREE_WHOLE}]
    assert pipeline("translation", model=str(SHIPPED), split_sentences=False)(THREE) == [
        {"translation_text": THREE_WHOLE}
    ]
    results = translator([THREE], num_beams=3, num_return_sequences=2)
    assert len(results[0]) == 2 and results[0][0] == {"translation_text": " ".join(THREE_ALONE)}


def test_without_a_language_the_pipeline_asks_for_one(tmp_path):
    save_tiny(tmp_path, source_lang=None)
    with pytest.raises(ValueError, match="has no source_lang"):
        pipeline("translation", model=str(tmp_path))(SENTENCES[0])


def test_the_batch_api_is_translations_and_pipelines_exports_only_its_own():
    import transformer_mt
    from transformer_mt import pipelines, translation

    assert transformer_mt.translate is translation.translate
    assert pipelines.__all__ == ["TranslationPipeline", "register_translation_pipeline"]
