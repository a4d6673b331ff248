"""Warm-start a TransformerMT encoder-decoder from a BERT checkpoint, as EncoderDecoderModel's bert2bert does.

    python scripts/convert_bert.py path/to/bert warm-started/bert2bert [--decoder_layers N] [--no_init_decoder]

The encoder computes what `BertModel` computes; each decoder layer starts from the BERT layer of the same index
unless --no_init_decoder; the printed report names every weight initialised fresh (see
`transformer_mt.bridges.bert`).
"""

import argparse

from transformer_mt.bridges import convert_bert
from transformer_mt.commands.cli import command


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bert_dir", help="A BERT checkpoint directory (config.json, model.safetensors, tokenizer).")
    parser.add_argument("output_dir", help="Where to write the TransformerMT checkpoint.")
    parser.add_argument(
        "--decoder_layers",
        type=int,
        default=None,
        help="Decoder depth (default: BERT's); layer i starts from BERT layer i.",
    )
    parser.add_argument(
        "--no_init_decoder", action="store_true", help="Initialise the whole decoder at random instead of from BERT."
    )
    parser.add_argument("--overwrite", action="store_true", help="Write into a non-empty output directory.")
    args = parser.parse_args(argv)
    _, report = convert_bert(
        args.bert_dir, args.output_dir, not args.no_init_decoder, args.decoder_layers, args.overwrite
    )
    print(f"Warm-started {args.bert_dir} -> {args.output_dir}\n{report}")


if __name__ == "__main__":
    main()
