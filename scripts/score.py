"""Score a model, a CTranslate2 export or a file of hypotheses on a split: BLEU, chrF, chrF++ and TER with their
sacreBLEU signatures, as papers report them.

    python scripts/score.py --model runs/main-sinusoidal --data data/en-de --split test
    python scripts/score.py --model runs/main-ct2-int8 --data data/en-de --bootstrap 1000
    python scripts/score.py --hypotheses test.hyp.de --data data/en-de --split test --metrics bleu chrf
    python scripts/score.py --model runs/my-model --data wmt14 --dataset_config_name de-en --split test
    python scripts/score.py --model runs/main-sinusoidal --data data/en-de --join_pairs 2   # 2 pairs an input
    python scripts/score.py --model runs/main-sinusoidal --pairs pairs.tsv > pair_scores.tsv  # given translations
    python scripts/score.py --model runs/broad --data ../shared/data/en-de --by_column origin  # per origin too
    python scripts/score.py --hypotheses a.de --compare b.de runs/other --paired bs --data data/en-de  # significance
    python scripts/score.py --hypotheses zh.hyp --data my_test.tsv --tokenize zh --segment_scores lines.tsv

--data is a directory of train/validation/test .tsv/.csv/.jsonl files or a Hub dataset name (online). A model
directory translates with generate() and its generation config (or --num_beams); a directory holding model.bin is
taken as a CTranslate2 export; each source is translated whole, never split into sentences. --join_pairs K joins
the split's pairs K at a time (sources and references alike) to score long, multi-sentence inputs.
--bootstrap N adds sacreBLEU's bootstrap mean and 95% confidence interval.

--pairs FILE (one source<TAB>target a line) scores given translations instead: how likely the model finds each
target given its source (teacher forcing, </s> included; `transformer_mt.pair_scoring`), one TSV row a pair: line
number, log-probability, tokens, per token, and the n-best score (log-probability / tokens**--length_penalty, the
generation config's by default), in the file's order. For filtering back-translations, reranking, quality checks.
Prints one line per metric with its signature; --output writes the JSON (never over a file).
"""

import argparse
import os

from transformer_mt.cli import command
from transformer_mt.evaluation import METRICS, TOKENIZERS, evaluate_split, signature_line, write_results


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    system = parser.add_mutually_exclusive_group(required=True)
    system.add_argument("--model", help="A saved model directory, or a CTranslate2 export.")
    system.add_argument("--hypotheses", help="A file of translations, one per line of the split.")
    parser.add_argument("--data", help="The data to score on (required unless --pairs).")
    parser.add_argument("--pairs", help="Score these given pairs (source<TAB>target a line) with --model instead.")
    parser.add_argument("--length_penalty", type=float, help="--pairs: the score's length penalty.")
    parser.add_argument("--dataset_config_name", help="The Hub dataset's configuration, e.g. de-en.")
    parser.add_argument("--split", default="test")
    parser.add_argument("--source_lang", default="en")
    parser.add_argument("--target_lang", default="de")
    parser.add_argument("--max_samples", type=int, help="Score only the first N pairs.")
    parser.add_argument("--join_pairs", type=int, default=1, help="Join the pairs K at a time (default 1: none).")
    parser.add_argument("--by_column", help="Also score each value of this column of the data apart (e.g. origin).")
    parser.add_argument("--metrics", nargs="+", choices=METRICS, default=list(METRICS))
    parser.add_argument("--bootstrap", type=int, help="Bootstrap resamples for a 95%% confidence interval.")
    parser.add_argument("--num_beams", type=int, help="Beam size (default: the model's generation config).")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--output", help="Also write the results as JSON here.")
    sacre = parser.add_argument_group("sacreBLEU's settings (kept in the signatures)")
    sacre.add_argument("--tokenize", choices=TOKENIZERS, default="13a",
                       help="BLEU's tokenizer: 13a (default), zh for Chinese, ja-mecab for Japanese, char, intl, ...")
    sacre.add_argument("--lowercase", action="store_true", help="Score case-insensitively.")
    sacre.add_argument("--references", nargs="+", default=[], metavar="FILE",
                       help="More references: files of one reference a line, aligned with the split.")
    sacre.add_argument("--segment_scores", metavar="FILE",
                       help="Also write each line's sentence BLEU and chrF as TSV: line, BLEU, chrF.")
    sacre.add_argument("--paired", choices=("bs", "ar"), help="Compare with --compare's systems: paired bootstrap "
                       "resampling (bs) or approximate randomization (ar), p-values against this system.")
    sacre.add_argument("--compare", nargs="+", default=[], metavar="SYSTEM",
                       help="--paired: other systems, each a file of hypotheses or a model directory.")
    sacre.add_argument("--paired_samples", type=int, default=1000, help="--paired: resamples (default 1000).")
    args = parser.parse_args(argv)
    if args.pairs is not None:
        return score_given_pairs(parser, args)
    if args.data is None:
        parser.error("--data is required (or --pairs FILE with --model)")
    if args.output and os.path.exists(args.output):
        parser.error(f"--output {args.output!r} exists; results never replace a file")
    for name in ("max_samples", "num_beams", "batch_size", "join_pairs", "paired_samples"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if bool(args.paired) != bool(args.compare):
        parser.error("--paired and --compare go together: a test, and the systems to compare with")
    for path in [args.segment_scores, args.output]:
        if path and os.path.exists(path):
            parser.error(f"{path!r} exists; results never replace a file")
    if args.paired:
        return compare(args)
    results = evaluate_split(args.data, args.split, args.model, args.hypotheses, args.source_lang, args.target_lang,
                             args.dataset_config_name, args.max_samples, tuple(args.metrics), args.bootstrap,
                             args.num_beams, args.batch_size, args.join_pairs, args.by_column, args.tokenize,
                             args.lowercase, args.references, segments=bool(args.segment_scores))
    inputs = f"{results['pairs']} inputs of {args.join_pairs} joined pairs" if args.join_pairs > 1 \
        else f"{results['pairs']} pairs"
    print(f"{results['system']} on {results['data']} ({results['split']}, {inputs}):")
    print(signature_line(results))
    if args.segment_scores:
        from transformer_mt.translate_command import atomic_output

        with atomic_output(args.segment_scores) as output:
            for number, row in enumerate(results.pop("segments"), 1):
                print(f"{number}\t{row['bleu']}\t{row['chrf']}", file=output)
    if args.output:
        write_results(results, args.output)


def compare(args) -> None:
    """--paired: this system against --compare's on the split, sacreBLEU's paired test."""
    from transformer_mt.evaluation import (
        compare_systems,
        comparison_lines,
        read_references,
        split_pairs,
        system_hypotheses,
    )

    _, sources, references = split_pairs(args.data, args.split, args.source_lang, args.target_lang,
                                         args.dataset_config_name, args.max_samples, args.join_pairs)
    baseline = args.model or args.hypotheses
    systems = {name: system_hypotheses(name, sources, args.num_beams, args.batch_size,
                                       is_model=True if name == args.model else None)
               for name in [baseline, *args.compare]}
    compared = compare_systems(systems, references, args.metrics, args.paired, args.paired_samples, args.tokenize,
                               args.lowercase, read_references(args.references))
    print(comparison_lines(compared))
    if args.output:
        write_results(compared, args.output)


def score_given_pairs(parser, args) -> None:
    from transformer_mt.pair_scoring import read_pairs, score_saved
    from transformer_mt.translate_command import atomic_output

    if args.model is None:
        parser.error("--pairs scores with a model: give --model")
    if args.output and os.path.exists(args.output):
        parser.error(f"--output {args.output!r} exists; results never replace a file")
    if not os.path.isfile(args.pairs):
        parser.error(f"--pairs {args.pairs!r} does not exist")
    scores = score_saved(args.model, *read_pairs(args.pairs), args.batch_size, args.length_penalty)
    with atomic_output(args.output) as output:
        for number, pair in enumerate(scores, 1):
            print(f"{number}\t{pair.log_prob:.4f}\t{pair.tokens}\t{pair.per_token:.4f}\t{pair.score:.4f}",
                  file=output)


if __name__ == "__main__":
    main()
