"""transformers' own common model tests (`ModelTesterMixin`, from the transformers sdist) run against TransformerMT.

Every model inside transformers passes them; they check loading, tying, resizing, outputs, attention backends,
gradient checkpointing and more. The sdist of the installed transformers version holds
`tests/test_modeling_common.py` (not the generation mixin, which its import needs: a stub stands in, and
tests/test_generation.py covers generation). It is downloaded from PyPI once into a cache folder, never committed;
the module is marked `network` for that first download. Offline and not cached, the module skips with a one-line
reason (under CI=true it fails instead: CI has PyPI, and a skip there would hide the suite).
"""

import importlib
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

import pytest
import torch
import transformers
from transformers.models.auto import modeling_auto

from transformer_mt import (
    POSITION_EMBEDDING_TYPES,
    TransformerMTConfig,
    TransformerMTForConditionalGeneration,
    TransformerMTModel,
)


CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "transformer-mt"
STUBS = {
    "__init__.py": "",
    "generation/__init__.py": "",
    "generation/test_utils.py": (
        "class GenerationTesterMixin:  # not in the sdist; see tests/test_generation.py\n    pass\n"
    ),
    "exporters/__init__.py": "",
    "exporters/test_export.py": "class ExportTesterMixin:  # not in the sdist\n    pass\n",
}


def common_tests_package() -> str:
    """The importable name of a package holding transformers' test_modeling_common.py for this version."""
    version = transformers.__version__
    root = CACHE / f"transformers-{version}-common-tests"
    package = "transformers_common_tests"
    if not (root / package / "test_modeling_common.py").is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as staging:
            try:
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        f"transformers=={version}",
                        "--no-deps",
                        "--no-binary",
                        ":all:",
                        "--no-build-isolation",
                        "--quiet",
                        "-d",
                        staging,
                    ],
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
                if os.environ.get("CI"):
                    raise
                pytest.skip(
                    f"transformers' common model tests need the transformers {version} sdist from PyPI "
                    f"(not in {CACHE}, and pip download failed: {type(error).__name__})",
                    allow_module_level=True,
                )
            (sdist,) = Path(staging).glob("transformers-*.tar.gz")
            with tarfile.open(sdist) as archive:
                member = archive.getmember(f"transformers-{version}/tests/test_modeling_common.py")
                source = archive.extractfile(member).read()
            target = Path(staging) / "root" / package
            for name, text in STUBS.items():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                (target / name).write_text(text)
            (target / "test_modeling_common.py").write_bytes(source)
            try:
                os.replace(Path(staging) / "root", root)  # atomic: a concurrent worker may have won the race
            except OSError:
                if not (root / package / "test_modeling_common.py").is_file():
                    raise
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return package


pytestmark = [pytest.mark.network, pytest.mark.slow]  # network: the first run downloads the sdist
common = importlib.import_module(f"{common_tests_package()}.test_modeling_common")

# Several common tests select models by class name from transformers' own tables, which third-party registration
# (AutoModel.register) does not fill.
modeling_auto.MODEL_MAPPING_NAMES.setdefault("transformer_mt", "TransformerMTModel")
modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES.setdefault(
    "transformer_mt", "TransformerMTForConditionalGeneration"
)


class TransformerMTModelTester:
    """What ModelTesterMixin asks of a model's tester: a tiny config and inputs for it."""

    def __init__(
        self,
        parent,
        batch_size=3,
        seq_length=7,
        vocab_size=99,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        is_training=True,
        position_embedding_type="sinusoidal",
    ):
        self.parent = parent
        self.position_embedding_type = position_embedding_type
        self.batch_size, self.seq_length, self.vocab_size = batch_size, seq_length, vocab_size
        self.hidden_size, self.num_hidden_layers = hidden_size, num_hidden_layers
        self.num_attention_heads, self.intermediate_size = num_attention_heads, intermediate_size
        self.is_training = is_training
        self.encoder_seq_length = self.decoder_seq_length = seq_length
        self.pad_token_id, self.bos_token_id, self.eos_token_id = 0, 1, 2

    def get_config(self, **overrides) -> TransformerMTConfig:
        kwargs = dict(
            vocab_size=self.vocab_size,
            d_model=self.hidden_size,
            encoder_layers=self.num_hidden_layers,
            decoder_layers=self.num_hidden_layers,
            encoder_attention_heads=self.num_attention_heads,
            decoder_attention_heads=self.num_attention_heads,
            encoder_ffn_dim=self.intermediate_size,
            decoder_ffn_dim=self.intermediate_size,
            max_position_embeddings=64,
            pad_token_id=self.pad_token_id,
            bos_token_id=self.bos_token_id,
            eos_token_id=self.eos_token_id,
            decoder_start_token_id=self.bos_token_id,
            position_embedding_type=self.position_embedding_type,
        )
        return TransformerMTConfig(**{**kwargs, **overrides})

    def prepare_config_and_inputs_for_common(self):
        input_ids = common.ids_tensor([self.batch_size, self.seq_length], self.vocab_size).clamp(3)
        decoder_input_ids = common.ids_tensor([self.batch_size, self.seq_length], self.vocab_size).clamp(3)
        inputs = {
            "input_ids": input_ids,
            "attention_mask": input_ids.ne(self.pad_token_id).long(),
            "decoder_input_ids": decoder_input_ids,
            "decoder_attention_mask": decoder_input_ids.ne(self.pad_token_id).long(),
        }
        return self.get_config(), inputs


# Common tests that cannot apply here, by reason; they are left out rather than reported as skipped.
NOT_APPLICABLE = {
    "need a GPU or another accelerator, or several": [
        "test_can_load_with_device_context_manager",
        "test_can_load_with_global_device_set",
        "test_cpu_offload",
        "test_disk_offload_bin",
        "test_disk_offload_safetensors",
        "test_model_parallelism",
        "test_sdpa_can_compile_dynamic",
        "test_sdpa_can_dispatch_on_flash",
        "test_torch_compile_for_training",
        "test_flex_attention_with_grads",
        "test_resize_embeddings_untied_with_deepspeed_multi_gpu",
        "test_resize_tokens_embeddings_with_deepspeed_multi_gpu",
    ],
    "flash attention, kernels or MPS (not installed here; the model does not claim flash attention)": [
        "test_flash_attn_2_can_compile_with_attention_mask_None_without_graph_break",
        "test_flash_attn_2_can_dispatch_composite_models",
        "test_flash_attn_2_fp32_ln",
        "test_flash_attn_2_from_config",
        "test_flash_attn_2_inference_equivalence",
        "test_flash_attn_2_inference_equivalence_right_padding",
        "test_flash_attn_3_can_dispatch_composite_models",
        "test_flash_attn_3_from_config",
        "test_flash_attn_3_inference_equivalence",
        "test_flash_attn_3_inference_equivalence_right_padding",
        "test_flash_attn_4_can_dispatch_composite_models",
        "test_flash_attn_4_from_config",
        "test_flash_attn_4_inference_equivalence",
        "test_flash_attn_4_inference_equivalence_right_padding",
        "test_flash_attn_kernels_inference_equivalence",
        "test_flash_attn_kernels_mps_inference_equivalence",
        "test_kernels_can_load_without_crashing",
    ],
    "deepspeed (not a dependency)": [
        "test_resize_embeddings_untied_with_deepspeed",
        "test_resize_tokens_embeddings_with_deepspeed",
    ],
    "transformers' RoPE variants (rope_parameters' linear, dynamic and yarn scaling, partial rotation, vision axial "
    "RoPE): position_embedding_type='rotary' is plain RoPE over the whole head, base 10000, without scaling": [
        "test_model_rope_scaling_frequencies",
        "test_model_rope_scaling_from_config_0_linear",
        "test_model_rope_scaling_from_config_1_dynamic",
        "test_model_rope_scaling_from_config_2_yarn",
        "test_model_rope_with_partial_rotation",
        "test_vision_axial_rope",
    ],
    "features this architecture does not have (experts, sliding windows, grouped matmuls, sub-configs, a "
    "tensor-parallel plan, a decoder-only head in all_model_classes, resizable positions)": [
        "test_moe_models_record_router_logits",
        "test_output_router_logits_from_config",
        "test_sliding_window_mask",
        "test_tp_plan_matches_params",
        "test_eager_matches_batched_and_grouped_inference_0_fp16",
        "test_eager_matches_batched_and_grouped_inference_1_fp32",
        "test_eager_matches_batched_and_grouped_inference_2_bf16",
        "test_attn_implementation_composite_models",
        "test_can_set_attention_dynamically_composite_model",
        "test_sdpa_can_dispatch_composite_models",
        "test_internal_model_config_and_subconfig_are_same",
        "test_causal_lm_loss_honors_shift_labels",
        "test_resize_position_vector_embeddings",
    ],
    "nothing to check here: no modules pinned to fp32, no checkpoint key conversion, and seq2seq outputs name their "
    "hidden states encoder_/decoder_hidden_states (as BART's do)": [
        "test_keep_in_fp32_modules",
        "test_keep_in_fp32_modules_exist",
        "test_keep_in_fp32_modules_strict_also_hardcode_fp32",
        "test_can_load_from_already_mapped_keys",
        "test_reverse_loading_mapping",
        "test_can_capture_specific_layers_hidden_states",
    ],
    "generation's common tests are not in the sdist (tests/test_generation.py covers generate)": [
        "test_generation_tester_mixin_inheritance",
    ],
}


class TransformerMTCommonTest(common.ModelTesterMixin, unittest.TestCase):
    all_model_classes = (TransformerMTModel, TransformerMTForConditionalGeneration)
    is_encoder_decoder = True
    test_torch_exportable = False  # the export mixin is not in the sdist either
    test_can_init_all_missing_weights_before_2023 = True  # the mixin dates models by a copyright line we lack

    position_embedding_type = "sinusoidal"

    def setUp(self):
        torch.manual_seed(0)
        self.model_tester = TransformerMTModelTester(self, position_embedding_type=self.position_embedding_type)

    def test_custom_4d_attention_mask(self):
        """Targets that share a prefix, packed into one row with a 4-D decoder mask and decoder_position_ids, give
        the logits they give one per row (the form transformers' T5 tests give this check).

        transformers' form calls `forward(input_ids, position_ids=..., attention_mask=<4-D>)` with no decoder
        inputs, which needs BART's convention of decoding the source shifted right (its denoising objective). A
        translation model's decoder reads the target, so that call is refused with a named error; nor can the
        encoder share a prefix between packed sequences: attending both ways, the prefix depends on every ending.
        """
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        model = TransformerMTForConditionalGeneration(config).to(torch.float32).eval()
        source = inputs["input_ids"][:1]
        targets = torch.tensor([[10, 11, 12, 13], [10, 11, 12, 14], [10, 11, 12, 15]])
        packed = torch.cat([targets[0, :-1], targets[:, -1]])[None]  # (1, 6): the prefix once, then the 3 endings
        packed_positions = torch.tensor([[0, 1, 2, 3, 3, 3]])
        allowed = torch.tensor(
            [
                [1, 0, 0, 0, 0, 0],
                [1, 1, 0, 0, 0, 0],
                [1, 1, 1, 0, 0, 0],
                [1, 1, 1, 1, 0, 0],
                [1, 1, 1, 0, 1, 0],
                [1, 1, 1, 0, 0, 1],
            ],
            dtype=torch.bool,
        )  # no ending sees another
        mask = torch.zeros(1, 1, 6, 6).masked_fill(~allowed, torch.finfo(torch.float32).min)
        with torch.no_grad():
            one_per_row = model(
                input_ids=source.expand(3, -1),
                decoder_input_ids=targets,
                decoder_position_ids=torch.arange(4).expand(3, -1),
            ).logits
            packed_logits = model(
                input_ids=source,
                decoder_input_ids=packed,
                decoder_attention_mask=mask,
                decoder_position_ids=packed_positions,
            ).logits
            with self.assertRaisesRegex(ValueError, "Pass exactly one of `decoder_input_ids` and "):
                model(packed, attention_mask=mask, position_ids=packed_positions)
        torch.testing.assert_close(
            packed_logits[0, -3:].softmax(-1), one_per_row[:, -1].softmax(-1), rtol=1e-3, atol=1e-4
        )


for _reason, _names in NOT_APPLICABLE.items():
    for _name in _names:
        assert hasattr(common.ModelTesterMixin, _name), _name  # a renamed test must be looked at again
        setattr(TransformerMTCommonTest, _name, None)  # not a test any more: unittest collects callables only


# The whole suite once more for every other position type (learned, alibi, rotary).
for _type in POSITION_EMBEDDING_TYPES[1:]:
    _name = f"TransformerMT{_type.capitalize()}CommonTest"
    globals()[_name] = type(_name, (TransformerMTCommonTest,), {"position_embedding_type": _type})
