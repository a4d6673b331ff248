"""Average the weights of a training run's last checkpoints (or the ones named) into a model directory.

    python scripts/average_checkpoints.py runs/my-model --last 5 --output_dir runs/my-model-avg5
    python scripts/average_checkpoints.py runs/my-model/checkpoint-3000 runs/my-model/checkpoint-4000 \\
        --output_dir runs/my-model-avg

The result loads with AutoModelForSeq2SeqLM/AutoTokenizer.from_pretrained and carries the newest checkpoint's
config, generation config and tokenizer. Checkpoints of another architecture or tokenizer, and incomplete ones, are
refused by name; --output_dir is never written over without --overwrite. See `transformer_mt.training.averaging`.
"""

import argparse

import torch

from transformer_mt.checkpoints import last_complete
from transformer_mt.commands.cli import command
from transformer_mt.training.averaging import average_checkpoints


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="A run's output_dir (with --last N), or checkpoint directories.")
    parser.add_argument("--last", type=int, help="Average the N newest complete checkpoints of the run directory.")
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--overwrite", action="store_true", help="Write into a non-empty --output_dir.")
    parser.add_argument(
        "--dtype",
        choices=["float16", "bfloat16", "float32"],
        help="Store the averaged weights in this dtype (e.g. float16: half the size to ship); they "
        "load back into the config's training dtype.",
    )
    args = parser.parse_args(argv)
    if args.last is not None:
        if len(args.paths) != 1:
            parser.error(f"--last takes one run directory, got {len(args.paths)} paths")
        checkpoints = last_complete(args.paths[0], args.last)
    else:
        checkpoints = args.paths
    output = average_checkpoints(
        checkpoints,
        args.output_dir,
        overwrite=args.overwrite,
        dtype=getattr(torch, args.dtype) if args.dtype else None,
    )
    print(f"Averaged {len(checkpoints)} checkpoints ({', '.join(str(c) for c in checkpoints)}) into {output}/")


if __name__ == "__main__":
    main()
