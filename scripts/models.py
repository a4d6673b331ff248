"""Install translation models from the package's index, verified file by file, and list, check or remove them.

    transformer-mt-models list                                   # the index's models, and which are installed
    transformer-mt-models install en-de                          # a pair's model (or its name: transformer-mt-en-de)
    transformer-mt-models install Helsinki-NLP/opus-mt-en-fr     # an Opus-MT model, converted by the Marian bridge
    transformer-mt-models verify                                 # every installed model's files against their hashes
    transformer-mt-models remove transformer-mt-en-de
    transformer-mt-models index --models models/                 # write the index from the repository's models/

Models go to --models_dir, else $TRANSFORMER_MT_MODELS, else ~/.local/share/transformer-mt/models. An install
fetches into a staging folder beside its place (from a repository checkout's models/, the Hub at a commit, or a
.tar.gz/.zip by https), checks every file's size and SHA-256 against the index, and only then renames it into place:
a mismatch names the file and leaves nothing behind. Plain http is refused but to a loopback host.
"""

from transformer_mt.commands.cli import command
from transformer_mt.commands.models import parse_args, run


@command
def main(argv=None):
    raise SystemExit(run(parse_args(argv, __doc__)))


if __name__ == "__main__":
    main()
