"""Share a trained TransformerMT model on the Hugging Face Hub, usable without installing transformer-mt.

    python scripts/push_to_hub.py runs/main-sinusoidal user/transformer-mt-en-de --dry_run     # list, upload nothing
    python scripts/push_to_hub.py runs/main-sinusoidal user/transformer-mt-en-de
    python scripts/push_to_hub.py runs/main-sinusoidal user/transformer-mt-en-de --overwrite   # update a repo

Uploads only the model's own files (weights, config, generation config, tokenizer), the files named with
--extra_files, and the generated remote code and model card; checkpoints, logs and anything else in the directory
stay behind, and a link out of it is refused. Honours HF_ENDPOINT and HF_TOKEN. --index_entry NAME then adds the
repository, at the commit it now serves, to the model index's entry NAME (every file downloaded back and hashed).
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.hub import push_to_hub
from transformer_mt.installer import add_hub_source, find, load_index


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="A directory written by the training script.")
    parser.add_argument("repo_id", help="The Hub repository, e.g. user/transformer-mt-en-de.")
    parser.add_argument("--overwrite", action="store_true", help="Replace files of an existing repository.")
    parser.add_argument("--private", action="store_true")
    parser.add_argument("--license", help="The card's license (default: the data's; several: 'other').")
    parser.add_argument("--extra_files", nargs="+", default=[], metavar="FILE", help="More files to upload.")
    parser.add_argument("--dry_run", action="store_true", help="List what would be uploaded; upload nothing.")
    parser.add_argument("--index_entry", metavar="NAME", help="Add the pushed repository to this model index entry.")
    parser.add_argument("--index", help="The model index to update (default: the package's).")
    args = parser.parse_args(argv)
    # an entry the index does not hold is refused before the push; a pair names its model
    entry = args.index_entry and (find(load_index(args.index), args.index_entry) or args.index_entry)
    uploaded, url = push_to_hub(
        args.model_dir,
        args.repo_id,
        args.overwrite,
        args.private,
        license=args.license,
        extra_files=args.extra_files,
        dry_run=args.dry_run,
    )
    print(f"{'Would upload' if args.dry_run else 'Uploaded'} {len(uploaded)} files to {args.repo_id}:")
    for name in uploaded:
        print(f"  {name}")
    if url:
        print(url)
    if entry and not args.dry_run:
        source = add_hub_source(entry, args.repo_id, path=args.index)["sources"][-1]
        print(f"Index entry {entry}: {args.repo_id} at {source['revision']}")


if __name__ == "__main__":
    main()
