"""Convert a MarianMT / Opus-MT checkpoint into a TransformerMT one with the same outputs.

    python scripts/convert_marian.py path/to/opus-mt-en-de converted/opus-mt-en-de --source_lang en --target_lang de

The converted directory holds our config and safetensors weights next to the checkpoint's own tokenizer files and
generation config (see `transformer_mt.bridges.marian`).
"""

import argparse

from transformer_mt.bridges import convert_marian
from transformer_mt.commands.cli import command


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("marian_dir", help="A MarianMT checkpoint directory (config.json, weights, tokenizer).")
    parser.add_argument("output_dir", help="Where to write the TransformerMT checkpoint.")
    parser.add_argument("--overwrite", action="store_true", help="Write into a non-empty output directory.")
    parser.add_argument(
        "--source_lang",
        help="The source language code, recorded in the config (translation splits "
        "input into sentences by it; default: the Marian config's or tokenizer config's, if any).",
    )
    parser.add_argument(
        "--target_lang", help="The target language code, recorded in the config (default: as --source_lang)."
    )
    args = parser.parse_args(argv)
    convert_marian(args.marian_dir, args.output_dir, args.overwrite, args.source_lang, args.target_lang)
    print(f"Converted {args.marian_dir} -> {args.output_dir}")


if __name__ == "__main__":
    main()
