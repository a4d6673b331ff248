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
    python scripts/score.py --model models/transformer-mt-en-de --data data/en-de --calibrate  # the confidence

--data is a directory of train/validation/test .tsv/.csv/.jsonl files or a Hub dataset name (online). A model
directory translates with generate() and its generation config (or --num_beams); a directory holding model.bin is
taken as a CTranslate2 export; each source is translated whole, never split into sentences. --join_pairs K joins
the split's pairs K at a time (sources and references alike) to score long, multi-sentence inputs.
--bootstrap N adds sacreBLEU's bootstrap mean and 95% confidence interval.

--pairs FILE (one source<TAB>target a line) scores given translations instead: how likely the model finds each
target given its source (teacher forcing, </s> included; `transformer_mt.engines.pair_scores`), a TSV row a pair: line
number, log-probability, tokens, per token, and the n-best score (log-probability / tokens**--length_penalty, the
generation config's by default), in the file's order. For filtering back-translations, reranking, quality checks.
Prints one line per metric with its signature; --output writes the JSON (never over a file).

--calibrate fits the model's confidence (`transformer_mt.quality`) on the --split (default validation) and writes
it beside the weights as calibration.json, bound to their hash.
"""

from transformer_mt.commands.cli import command
from transformer_mt.commands.score import parse_args, run


@command
def main(argv=None):
    run(parse_args(argv, __doc__))


if __name__ == "__main__":
    main()
