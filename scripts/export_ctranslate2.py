"""Export a TransformerMT checkpoint to CTranslate2, whose `Translator` decodes as `generate()` does.

    python scripts/export_ctranslate2.py runs/main-sinusoidal runs/main-sinusoidal-ct2 [--quantization int8] [--force]

The export holds the CTranslate2 model and the tokenizer; how each config field maps, and what is exact, is in
`transformer_mt.bridges.ctranslate2`.
"""

import argparse

import ctranslate2
from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES

from transformer_mt.bridges.ctranslate2 import export_ctranslate2
from transformer_mt.commands.cli import command


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A TransformerMT checkpoint directory (config, weights, tokenizer).")
    parser.add_argument("output_dir", help="Where to write the CTranslate2 model.")
    parser.add_argument(
        "--quantization",
        choices=ACCEPTED_MODEL_TYPES,
        default=None,
        help="Store the weights in this type (default: as they are, float32).",
    )
    parser.add_argument("--force", action="store_true", help="Write into a non-empty output directory.")
    args = parser.parse_args(argv)
    export_ctranslate2(args.model_dir, args.output_dir, args.quantization, args.force)
    print(f"Exported {args.model_dir} -> {args.output_dir} (CTranslate2 {ctranslate2.__version__})")


if __name__ == "__main__":
    main()
