import pytest
import torch
from transformers import pipeline

from transformer_mt import TranslationPipeline

from .utils import SENTENCES, save_tiny


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("translator")
    model, tokenizer = save_tiny(path)
    model.generation_config.num_beams = 2
    model.generation_config.max_length = 8
    model.generation_config.save_pretrained(path)
    return path, model, tokenizer


def test_translation_pipeline_equals_generate_and_decode(saved):
    path, model, tokenizer = saved
    translator = pipeline("translation", model=str(path))
    assert isinstance(translator, TranslationPipeline)
    expected = []
    for sentence in SENTENCES[::2]:
        ids = model.generate(**tokenizer(sentence, return_tensors="pt"))
        assert ids.shape[1] <= 8  # the saved generation config (beam 2, max_length 8) is used
        expected.append({"translation_text": tokenizer.decode(ids[0], skip_special_tokens=True).strip()})
    assert translator(SENTENCES[::2]) == expected
    assert translator(SENTENCES[0]) == expected[:1]


def test_generation_parameters_pass_through(saved):
    path, _, _ = saved
    translator = pipeline("translation", model=str(path))
    results = translator(SENTENCES[:2], num_beams=3, num_return_sequences=3, max_new_tokens=4)
    assert [len(r) for r in results] == [3, 3]
    torch.manual_seed(0)
    assert len(translator(SENTENCES[0], do_sample=True, num_return_sequences=2)) == 2


def test_non_string_input_is_rejected(saved):
    translator = pipeline("translation", model=str(saved[0]))
    with pytest.raises(ValueError, match="translates strings, got int"):
        translator(42)
