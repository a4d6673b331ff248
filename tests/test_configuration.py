import pytest
from transformers import AutoConfig

from transformer_mt import TransformerMTConfig

from .utils import REPO, tiny_config


def test_defaults_are_the_papers_base_model():
    config = TransformerMTConfig()
    assert (config.d_model, config.encoder_layers, config.decoder_layers) == (512, 6, 6)
    assert (config.encoder_attention_heads, config.encoder_ffn_dim, config.activation_function) == (8, 2048, "relu")
    assert config.dropout == 0.1
    assert config.position_embedding_type == "sinusoidal" and config.sinusoidal_layout == "interleaved"
    assert config.scale_embedding and config.tie_word_embeddings and config.is_encoder_decoder
    assert not config.normalize_before and not config.layernorm_embedding
    special = (config.pad_token_id, config.bos_token_id, config.eos_token_id, config.decoder_start_token_id)
    assert special == (0, 1, 2, 1)
    # attribute_map aliases that generation and tooling read
    assert (config.hidden_size, config.num_attention_heads, config.num_hidden_layers) == (512, 8, 6)
    assert (config.source_lang, config.target_lang) == (None, None)  # unknown unless training or a bridge says


def test_save_load_round_trip_and_autoconfig(tmp_path, position_type):
    config = tiny_config(position_embedding_type=position_type, type_vocab_size=0, normalize_before=True)
    config.save_pretrained(tmp_path)
    loaded = AutoConfig.from_pretrained(tmp_path)
    assert type(loaded) is TransformerMTConfig
    assert loaded.to_diff_dict() == config.to_diff_dict()
    assert loaded.position_embedding_type == position_type and loaded.type_vocab_size == 0
    assert (loaded.source_lang, loaded.target_lang) == ("en", "de")


def test_unknown_kwargs_pass_through():
    assert TransformerMTConfig(my_extra_field=3).my_extra_field == 3


SAVED_CONFIGS = [
    *sorted((REPO / "tests" / "fixtures" / "v0.1.0").iterdir()),
    *sorted(path for path in (REPO / "models").iterdir() if path.is_dir()),
]


@pytest.mark.parametrize("directory", SAVED_CONFIGS, ids=lambda path: path.name)
def test_saved_configs_still_load(directory):
    config = AutoConfig.from_pretrained(directory)
    assert type(config) is TransformerMTConfig and config.model_type == "transformer_mt"


def test_assignments_are_checked_too():
    config = tiny_config()
    with pytest.raises(ValueError, match=r"field 'dropout': .* got 2.0"):
        config.dropout = 2.0
    with pytest.raises(ValueError, match=r"Field 'position_embedding_type' expected one of .* got t5"):
        config.position_embedding_type = "t5"
    assert (config.dropout, config.position_embedding_type) == (0.1, "sinusoidal")  # unchanged


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"position_embedding_type": "t5"},
            "Field 'position_embedding_type' expected one of ('sinusoidal', 'learned', 'alibi', 'rotary'), got t5",
        ),
        (
            {
                "position_embedding_type": "rotary",
                "d_model": 36,
                "encoder_attention_heads": 6,
                "decoder_attention_heads": 12,
            },
            "the head size d_model / decoder_attention_heads must be even, got 3",
        ),
        (
            {"position_embedding_type": "alibi", "sinusoidal_layout": "concatenated"},
            "`sinusoidal_layout` ('concatenated') applies to position_embedding_type='sinusoidal' only, not 'alibi'",
        ),
        (
            {"sinusoidal_layout": "mixed"},
            "Field 'sinusoidal_layout' expected one of ('interleaved', 'concatenated'), got mixed",
        ),
        ({"activation_function": "swishy"}, "field 'activation_function': ValueError: Value must be one of ['gelu', "),
        (
            {"d_model": 30, "encoder_attention_heads": 4},
            "`d_model` (30) must be divisible by `encoder_attention_heads` (4)",
        ),
        (
            {"d_model": 36, "decoder_attention_heads": 8},
            "`d_model` (36) must be divisible by `decoder_attention_heads` (8)",
        ),
        ({"d_model": 33, "encoder_attention_heads": 3, "decoder_attention_heads": 3}, "`d_model` must be even"),
        ({"vocab_size": 0}, "field 'vocab_size': ValueError: Value must be a positive integer, got 0"),
        ({"d_model": -8}, "field 'd_model': ValueError: Value must be a positive integer, got -8"),
        ({"encoder_layers": 0}, "field 'encoder_layers': ValueError: Value must be a positive integer, got 0"),
        ({"decoder_ffn_dim": 2.5}, "Field 'decoder_ffn_dim' expected int, got float (value: 2.5)"),
        (
            {"max_position_embeddings": 0},
            "field 'max_position_embeddings': ValueError: Value must be greater or "
            "equal to 1 and smaller or equal to 1048576, got 0.",
        ),
        (
            {"max_position_embeddings": 10**9},
            "field 'max_position_embeddings': ValueError: Value must be greater or "
            "equal to 1 and smaller or equal to 1048576, got 1000000000.",
        ),
        ({"type_vocab_size": -1}, "field 'type_vocab_size': ValueError: Value must be greater or equal to 0, got -1"),
        (
            {"dropout": 1.0},
            "field 'dropout': ValueError: Value must be greater or equal to 0.0 and smaller than 1.0, got 1.0",
        ),
        (
            {"attention_dropout": -0.1},
            "field 'attention_dropout': ValueError: Value must be greater or equal to 0.0 "
            "and smaller than 1.0, got -0.1",
        ),
        ({"activation_dropout": "0.1"}, "Field 'activation_dropout' expected float, got str (value: '0.1')"),
        ({"layer_norm_eps": 0.0}, "field 'layer_norm_eps': ValueError: Value must be greater than 0.0, got 0.0"),
        ({"init_std": "0.02"}, "Field 'init_std' expected float, got str (value: '0.02')"),
        ({"pad_token_id": 99}, "`pad_token_id` must be an integer in [0, 98], got 99"),
        ({"eos_token_id": 500}, "`eos_token_id` must be an integer in [0, 98], got 500"),
        ({"eos_token_id": [2, 120]}, "`eos_token_id` must be an integer in [0, 98], got 120"),
        ({"forced_eos_token_id": -1}, "`forced_eos_token_id` must be an integer in [0, 98], got -1"),
        (
            {"decoder_vocab_size": 50, "share_encoder_decoder_embeddings": False, "eos_token_id": 60},
            "`eos_token_id` must be an integer in [0, 49], got 60",
        ),
        ({"decoder_vocab_size": 50}, "`decoder_vocab_size` (50) must equal `vocab_size` (99) when"),
        (
            {"decoder_vocab_size": 0, "share_encoder_decoder_embeddings": False},
            "field 'decoder_vocab_size': ValueError: Value must be a positive integer, got 0",
        ),
        (
            {"source_lang": ""},
            "field 'source_lang': ValueError: Value must be a language code (a non-empty string) or None, got ''",
        ),
        (
            {"target_lang": 3},
            "Field 'target_lang' with value 3 doesn't match any type in (<class 'str'>, <class 'NoneType'>)",
        ),
    ],
)
def test_invalid_values_raise_naming_field_value_and_allowed(overrides, message):
    with pytest.raises(ValueError) as error:
        tiny_config(**overrides)
    assert message in str(error.value)


def test_learned_positions_allow_odd_d_model():
    assert (
        tiny_config(
            d_model=33, encoder_attention_heads=3, decoder_attention_heads=3, position_embedding_type="learned"
        ).d_model
        == 33
    )


def test_an_int_where_a_float_is_declared_is_that_float():
    config = TransformerMTConfig(dropout=0, init_std=1)
    assert config.dropout == 0.0 and type(config.dropout) is float and type(config.init_std) is float
    config.attention_dropout = 0
    assert type(config.attention_dropout) is float
    with pytest.raises(ValueError, match="'dropout'"):
        TransformerMTConfig(dropout=True)  # a bool is no number here
