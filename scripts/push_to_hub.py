"""Share a trained TransformerMT model on the Hugging Face Hub, usable without installing transformer-mt.

    python scripts/push_to_hub.py runs/main-sinusoidal user/transformer-mt-en-de
    python scripts/push_to_hub.py runs/main-sinusoidal user/transformer-mt-en-de --overwrite   # update a repo

Uploads the model, tokenizer, generation config, generated remote code and a model card (see
`transformer_mt.hub`); honours HF_ENDPOINT and HF_TOKEN.
"""

import argparse

from transformer_mt.cli import command
from transformer_mt.hub import push_to_hub


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A directory written by the training script.")
    parser.add_argument("repo_id", help="The Hub repository, e.g. user/transformer-mt-en-de.")
    parser.add_argument("--overwrite", action="store_true", help="Replace files of an existing repository.")
    parser.add_argument("--private", action="store_true")
    parser.add_argument("--license", default="apache-2.0", help="License tag of the model card.")
    args = parser.parse_args(argv)
    url = push_to_hub(args.model_dir, args.repo_id, args.overwrite, args.private, license=args.license)
    print(f"Pushed {args.model_dir} to {args.repo_id}: {url}")


if __name__ == "__main__":
    main()
