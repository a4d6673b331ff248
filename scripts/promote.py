"""Promote a model fine-tuned on suggestions to what the server serves, if it has earned it.

    python scripts/promote.py runs/candidate --into /srv/mt/served --held_out_data data/en-de

The candidate (from `transformer-mt-train --suggestions ...`) is compared with the served model (--current, default:
what the symlink --into points at) on held-out original data (--held_out_data's --split) and on the held-out
suggestions training saved beside it (or --suggestions_held_out; at least 20). By --metric (chrf or bleu) and a
paired bootstrap, it is promoted only if it shows no loss significant at p < --alpha on the original data and a gain
significant at p < --alpha on the held-out suggestions; then --into is switched to it in one step, and every server
polling it (transformer-mt-serve --watch_seconds) loads it. Both metrics are printed, each with its p-value, and the
decision is written to CANDIDATE/promotion.json. Exit status 0 when promoted, 1 when not, 2 for an error.
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.serving.promotion import ALPHA, METRIC, METRICS, PAIRED_SAMPLES, PromotionSettings, promote, report


PATHS = ("candidate", "into", "held_out_data", "suggestions_held_out", "current")  # the rest: PromotionSettings


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("candidate", help="The fine-tuned model directory.")
    parser.add_argument("--into", required=True, help="The symlink the server serves (switched when promoted).")
    parser.add_argument("--current", help="The model served now (default: what --into points at).")
    parser.add_argument("--held_out_data", required=True, help="The served model's original data (held out).")
    parser.add_argument("--split", default="test", help="Its split to compare on (default test).")
    parser.add_argument("--max_samples", type=int, help="Compare on its first N pairs only.")
    parser.add_argument("--suggestions_held_out", help="Held-out suggestions (default: the candidate's own file).")
    parser.add_argument("--num_beams", type=int, help="Beams (default: each model's generation config).")
    parser.add_argument("--metric", default=METRIC, help=f"Decides: {' or '.join(METRICS)} (default %(default)s).")
    parser.add_argument("--alpha", type=float, default=ALPHA, help="Significance level (default %(default)s).")
    parser.add_argument("--paired_samples", type=int, default=PAIRED_SAMPLES, help="Bootstrap resamples.")
    parser.add_argument("--source_lang", default="en")
    parser.add_argument("--target_lang", default="de")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = vars(parse_args(argv))
    paths = {name: args.pop(name) for name in PATHS}
    decision = promote(**paths, settings=PromotionSettings(**args))
    print(report(decision))
    if not decision.promoted:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
