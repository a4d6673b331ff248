"""Tests of the joint English-German byte-level BPE tokenizer (CPU, a tiny inline corpus, a few seconds)."""

import unicodedata

import pytest
from transformers import AutoTokenizer

from transformer_mt import TransformerMTConfig
from transformer_mt.tokenization import TransformerMTTokenizerFast, tokenizer_fingerprint, train_tokenizer


PAD, BOS, EOS, UNK = 0, 1, 2, 3
VOCAB_SIZE = 400

ENGLISH = [
    "The weather is nice today.",
    "I would like a cup of coffee, please.",
    "Where is the train station?",
    "The children are playing in the garden.",
    "We are going to Munich on Friday.",
    "My brother lives in a small house near the river.",
    "The meeting starts at 9:30 in the morning.",
    "Can you help me with my homework?",
    "She said: 'I don't know the answer.'",
    "This book costs 12.50 euros.",
    "The street is closed because of the snow.",
    "Thank you very much for your help!",
    "The doctor will see you in 15 minutes.",
    "He has been working here since 2019.",
    "Please close the window, it is cold.",
    "The cat sleeps on the sofa all day.",
]
GERMAN = [
    "Das Wetter ist heute schön.",
    "Ich hätte gern eine Tasse Kaffee, bitte.",
    "Wo ist der Bahnhof?",
    "Die Kinder spielen im Garten.",
    "Wir fahren am Freitag nach München.",
    "Mein Bruder wohnt in einem kleinen Haus in der Nähe des Flusses.",
    "Die Besprechung beginnt um 9:30 Uhr morgens.",
    "Kannst du mir bei meinen Hausaufgaben helfen?",
    "Sie sagte: „Ich weiß die Antwort nicht.“",
    "Dieses Buch kostet 12,50 Euro.",
    "Die Straße ist wegen des Schnees gesperrt.",
    "Vielen Dank für Ihre Hilfe!",
    "Der Arzt empfängt Sie in 15 Minuten.",
    "Er arbeitet hier seit 2019.",
    "Bitte schließ das Fenster, es ist kalt.",
    "Die Katze schläft den ganzen Tag auf dem Sofa.",
]


@pytest.fixture(scope="module")
def tokenizer():
    # A generator: `texts` may be any iterable, consumed once.
    return train_tokenizer((line for line in ENGLISH + GERMAN), vocab_size=VOCAB_SIZE, min_frequency=2)


@pytest.fixture(scope="module")
def saved_dir(tokenizer, tmp_path_factory):
    AutoTokenizer.register(TransformerMTConfig, fast_tokenizer_class=TransformerMTTokenizerFast, exist_ok=True)
    path = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(path)
    return path


ROUND_TRIP_TEXTS = [
    "Die Straße ist schön, die Bücher gehören Jürgen.",
    "ÄÖÜ äöü ß ẞ",
    "Sie sagte: „Ich weiß es nicht.“ und ging.",
    "He said 'hello' and \"goodbye\".",
    "Call 0800-123 456 at 9:30, costs 12,50 € or $13.99.",
    "Unseen: 你好，世界 and emoji 🤗🇩🇪👍🏽",
    "Ελληνικά, русский, العربية, ◊∑∞",
    "  leading, double  spaces,\ttabs and\nnewlines ",
    "punctuation , spaced ; like ( this ) !",
    "",
]


@pytest.mark.parametrize("text", ROUND_TRIP_TEXTS)
def test_round_trip(tokenizer, text):
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    assert UNK not in ids  # byte-level: nothing is unknown, not even characters never seen in training


def test_round_trip_batch(tokenizer):
    batch = tokenizer(ROUND_TRIP_TEXTS, padding=True)
    assert tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True) == ROUND_TRIP_TEXTS


def test_nfc_normalization(tokenizer):
    decomposed = unicodedata.normalize("NFD", "Grüße aus Köln")
    assert decomposed != "Grüße aus Köln"
    assert tokenizer(decomposed)["input_ids"] == tokenizer("Grüße aus Köln")["input_ids"]
    assert tokenizer.decode(tokenizer(decomposed)["input_ids"], skip_special_tokens=True) == "Grüße aus Köln"


def test_special_token_ids(tokenizer):
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token, tokenizer.unk_token) == (
        "<pad>",
        "<s>",
        "</s>",
        "<unk>",
    )
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (
        PAD,
        BOS,
        EOS,
        UNK,
    )
    assert tokenizer.convert_ids_to_tokens([0, 1, 2, 3]) == ["<pad>", "<s>", "</s>", "<unk>"]
    assert tokenizer.padding_side == "right"
    assert tokenizer.model_input_names == ["input_ids", "token_type_ids", "attention_mask"]


def test_eos_appended(tokenizer):
    plain = tokenizer("Guten Morgen!", add_special_tokens=False)["input_ids"]
    assert EOS not in plain and BOS not in plain
    encoding = tokenizer("Guten Morgen!")
    assert encoding["input_ids"] == plain + [EOS]
    assert encoding["token_type_ids"] == [0] * (len(plain) + 1)
    assert encoding["attention_mask"] == [1] * (len(plain) + 1)
    assert tokenizer.decode(encoding["input_ids"]) == "Guten Morgen!</s>"


def test_pair_token_type_ids(tokenizer):
    first = tokenizer("Where is the station?", add_special_tokens=False)["input_ids"]
    second = tokenizer("Wo ist der Bahnhof?", add_special_tokens=False)["input_ids"]
    pair = tokenizer("Where is the station?", "Wo ist der Bahnhof?")
    assert pair["input_ids"] == first + [EOS] + second + [EOS]
    assert pair["token_type_ids"] == [0] * (len(first) + 1) + [1] * (len(second) + 1)
    assert pair["attention_mask"] == [1] * (len(first) + len(second) + 2)


def test_joint_vocabulary(tokenizer):
    # Frequent words of both languages were merged into single tokens of the one shared vocabulary.
    assert len(tokenizer) <= VOCAB_SIZE
    for word in [" the", " der", " ist", " is", "The", "Die"]:
        assert len(tokenizer(word, add_special_tokens=False)["input_ids"]) == 1, word


def test_text_target_labels(tokenizer):
    batch = tokenizer(["The cat sleeps."], text_target=["Die Katze schläft."])
    assert batch["input_ids"] == [tokenizer("The cat sleeps.")["input_ids"]]
    assert batch["labels"] == [tokenizer("Die Katze schläft.")["input_ids"]]
    assert batch["labels"][0][-1] == EOS
    assert EOS not in batch["labels"][0][:-1]


def test_padding_right(tokenizer):
    short = tokenizer("Danke!")["input_ids"]
    long = tokenizer("Vielen Dank für Ihre Hilfe!")["input_ids"]
    n = len(long) - len(short)
    assert n > 0
    batch = tokenizer(["Danke!", "Vielen Dank für Ihre Hilfe!"], padding=True)
    assert batch["input_ids"] == [short + [PAD] * n, long]
    assert batch["attention_mask"] == [[1] * len(short) + [0] * n, [1] * len(long)]
    assert batch["token_type_ids"] == [[0] * len(long), [0] * len(long)]


def test_padding_left(tokenizer, saved_dir):
    short = tokenizer("Danke!")["input_ids"]
    long = tokenizer("Vielen Dank für Ihre Hilfe!")["input_ids"]
    n = len(long) - len(short)
    expected_ids = [[PAD] * n + short, long]
    expected_mask = [[0] * n + [1] * len(short), [1] * len(long)]

    batch = tokenizer(["Danke!", "Vielen Dank für Ihre Hilfe!"], padding=True, padding_side="left")
    assert batch["input_ids"] == expected_ids
    assert batch["attention_mask"] == expected_mask

    left = AutoTokenizer.from_pretrained(saved_dir, padding_side="left")
    assert left.padding_side == "left"
    batch = left(["Danke!", "Vielen Dank für Ihre Hilfe!"], padding=True)
    assert batch["input_ids"] == expected_ids
    assert batch["attention_mask"] == expected_mask
    assert tokenizer.padding_side == "right"  # the trained tokenizer was not changed


def test_save_and_auto_load(tokenizer, saved_dir):
    loaded = AutoTokenizer.from_pretrained(saved_dir)
    assert type(loaded) is TransformerMTTokenizerFast
    assert loaded.get_vocab() == tokenizer.get_vocab()
    assert (loaded.pad_token_id, loaded.bos_token_id, loaded.eos_token_id, loaded.unk_token_id) == (PAD, BOS, EOS, UNK)
    assert loaded.padding_side == "right"

    sources = ["Where is the station?", "Unseen: 你好 🤗", "Grüße „aus“ Köln"]
    targets = ["Wo ist der Bahnhof?", "Ungesehen: 你好 🤗", "Greetings 'from' Cologne"]
    expected = tokenizer(sources, targets, padding=True)
    actual = loaded(sources, targets, padding=True)
    assert dict(actual) == dict(expected)
    # The post-processor survived: a pair still gets two segments, each ended by </s>.
    first = tokenizer("Hallo", add_special_tokens=False)["input_ids"]
    second = tokenizer("Welt", add_special_tokens=False)["input_ids"]
    pair = loaded("Hallo", "Welt")
    assert pair["input_ids"] == first + [EOS] + second + [EOS]
    assert pair["token_type_ids"] == [0] * (len(first) + 1) + [1] * (len(second) + 1)
    # The NFC normalizer and byte-level decoder survived too.
    text = unicodedata.normalize("NFD", ROUND_TRIP_TEXTS[0])
    assert loaded.decode(loaded(text)["input_ids"], skip_special_tokens=True) == ROUND_TRIP_TEXTS[0]
    for text in ROUND_TRIP_TEXTS:
        assert loaded.decode(loaded(text)["input_ids"], skip_special_tokens=True) == text


def test_auto_load_next_to_model_config(tokenizer, tmp_path):
    # A checkpoint directory also holds config.json; AutoTokenizer then goes through the config's model_type.
    AutoTokenizer.register(TransformerMTConfig, fast_tokenizer_class=TransformerMTTokenizerFast, exist_ok=True)
    TransformerMTConfig(vocab_size=len(tokenizer)).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(loaded) is TransformerMTTokenizerFast
    assert loaded("Hallo", "Welt")["token_type_ids"] == tokenizer("Hallo", "Welt")["token_type_ids"]


@pytest.mark.parametrize("bad", [0, 100, 260, 8000.0, "8000", True, None])
def test_bad_vocab_size(bad):
    with pytest.raises(ValueError, match=r"`vocab_size` must be an integer >= 261, got") as info:
        train_tokenizer(ENGLISH, vocab_size=bad)
    assert repr(bad) in str(info.value)


def test_smallest_vocab_size_trains():
    tokenizer = train_tokenizer(ENGLISH + GERMAN, vocab_size=261)
    assert len(tokenizer) == 261
    assert tokenizer.decode(tokenizer("schön 🤗")["input_ids"], skip_special_tokens=True) == "schön 🤗"


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_bad_min_frequency(bad):
    with pytest.raises(ValueError, match="`min_frequency` must be an integer >= 1"):
        train_tokenizer(ENGLISH, min_frequency=bad)


def test_texts_must_not_be_a_string():
    with pytest.raises(TypeError, match="`texts` must be an iterable of strings, got str"):
        train_tokenizer("The weather is nice today.")


@pytest.mark.parametrize("texts", [[], ["", "   "]], ids=["nothing", "only blanks"])
def test_training_on_no_text_is_refused(texts):
    with pytest.raises(ValueError, match="`texts` holds no non-empty text"):
        train_tokenizer(texts, vocab_size=300)


# --- Unigram (SentencePiece-style) and separate source/target vocabularies ---


@pytest.fixture(scope="module")
def unigram():
    return train_tokenizer(ENGLISH + GERMAN, vocab_size=300, tokenizer_type="unigram")


@pytest.fixture(scope="module")
def separate():
    return train_tokenizer(ENGLISH, vocab_size=290, target_texts=GERMAN, target_vocab_size=320)


@pytest.mark.parametrize("text", ENGLISH[:4] + GERMAN[:4] + ["Die Kinder schlafen im Haus, die Katze spielt."])
def test_unigram_round_trip(unigram, text):
    ids = unigram(text)["input_ids"]
    assert ids[-1] == EOS and UNK not in ids
    assert unigram.decode(ids, skip_special_tokens=True) == text


def test_unigram_is_a_metaspace_unigram_with_the_models_special_ids(unigram):
    from transformer_mt.tokenization import tokenizer_type_of

    assert tokenizer_type_of(unigram) == "unigram"
    assert unigram.convert_ids_to_tokens([PAD, BOS, EOS, UNK]) == ["<pad>", "<s>", "</s>", "<unk>"]
    tokens = unigram.tokenize("The weather is nice.")
    assert tokens[0].startswith("▁") and "".join(tokens).replace("▁", " ").strip() == "The weather is nice."
    assert unigram("Unseen: 你")["input_ids"][-2] == UNK  # no byte fallback, as in SentencePiece's default


def test_unigram_saves_loads_and_keeps_its_fingerprint(unigram, tmp_path):
    unigram.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert type(loaded) is TransformerMTTokenizerFast and not loaded.separate_vocabs
    assert loaded(GERMAN)["input_ids"] == unigram(GERMAN)["input_ids"]
    assert tokenizer_fingerprint(loaded) == tokenizer_fingerprint(unigram)
    bpe = train_tokenizer(ENGLISH + GERMAN, vocab_size=300)
    assert tokenizer_fingerprint(bpe) != tokenizer_fingerprint(unigram)


def test_separate_vocabularies_encode_each_side_with_its_own(separate):
    assert separate.separate_vocabs and len(separate) <= 290 and len(separate.target_tokenizer) <= 320
    assert len(separate) != len(separate.target_tokenizer)
    batch = separate(ENGLISH[:2], text_target=GERMAN[:2])
    assert batch["input_ids"] == train_tokenizer(ENGLISH, vocab_size=290)(ENGLISH[:2])["input_ids"]
    assert batch["labels"] == separate.target_tokenizer(GERMAN[:2])["input_ids"]
    assert batch["input_ids"][0] != separate.target_tokenizer(ENGLISH[0])["input_ids"]  # not the target vocabulary
    # decode reads target ids, what generate() returns
    assert separate.batch_decode(batch["labels"], skip_special_tokens=True) == GERMAN[:2]
    assert separate(ENGLISH[0])["input_ids"] == batch["input_ids"][0]  # back in source mode after text_target


def test_separate_vocabularies_save_beside_each_other_and_the_fingerprint_covers_both(separate, tmp_path):
    separate.save_pretrained(tmp_path)
    assert (tmp_path / "target_tokenizer.json").is_file()
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded.separate_vocabs and len(loaded.target_tokenizer) == len(separate.target_tokenizer)
    assert loaded(ENGLISH, text_target=GERMAN) == separate(ENGLISH, text_target=GERMAN)
    assert tokenizer_fingerprint(loaded) == tokenizer_fingerprint(separate)
    other = train_tokenizer(ENGLISH, vocab_size=290, target_texts=GERMAN[:8], target_vocab_size=320)
    assert other.get_vocab() == separate.get_vocab()  # the same source vocabulary ...
    assert tokenizer_fingerprint(other) != tokenizer_fingerprint(separate)  # ... another target one


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(tokenizer_type="wordpiece"), r"`tokenizer_type` must be one of \('bpe', 'unigram'\), got 'wordpiece'"),
        (dict(target_vocab_size=300), "`target_vocab_size` sizes the target vocabulary trained on `target_texts`"),
        (dict(target_texts=GERMAN, target_vocab_size=100), "`target_vocab_size` must be an integer >= 261, got 100"),
    ],
)
def test_bad_tokenizer_choices_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_tokenizer(ENGLISH, vocab_size=300, **kwargs)


def test_a_failed_target_encoding_leaves_the_tokenizer_on_the_source_side(separate):
    with pytest.raises(ValueError):
        separate(text_target=[GERMAN[0], GERMAN[1] + " und mehr"], return_tensors="pt")  # unequal lengths
    assert separate.get_vocab() == train_tokenizer(ENGLISH, vocab_size=290).get_vocab()
    assert separate.encode(ENGLISH[0]) == separate(ENGLISH[0])["input_ids"]


def test_source_ids_decode_with_use_source_tokenizer_and_one_length_limit_holds_both_sides(separate):
    ids = separate(ENGLISH[0])["input_ids"]
    assert separate.decode(ids, skip_special_tokens=True, use_source_tokenizer=True) == ENGLISH[0]
    assert separate.decode(ids, skip_special_tokens=True) != ENGLISH[0]  # by default: target ids
    limit = separate.model_max_length
    try:
        separate.model_max_length = 5
        assert separate.target_tokenizer.model_max_length == 5
        assert len(separate(text_target=GERMAN[5], truncation=True)["input_ids"]) == 5
    finally:
        separate.model_max_length = limit


def test_a_missing_target_vocabulary_is_an_error_not_a_silent_fallback(separate, tmp_path):
    separate.save_pretrained(tmp_path)
    (tmp_path / "target_tokenizer.json").unlink()
    with pytest.raises(ValueError, match=r"its target vocabulary \(target_tokenizer.json\) is missing"):
        AutoTokenizer.from_pretrained(tmp_path)
