"""Promote a model fine-tuned on suggestions to what the server serves, if it has earned it.

    python scripts/promote.py runs/candidate --into /srv/mt/served --held_out_data data/en-de

The candidate (from `transformer-mt-train --suggestions ...`) is compared with the served model (--current, default:
what the symlink --into points at) on held-out original data (--held_out_data's --split, default test) and on the
held-out suggestions training saved beside it (or --suggestions_held_out). It is promoted only if its BLEU on the
original data is not significantly lower (paired bootstrap, p < --alpha, default 0.05) and its chrF on the
held-out suggestions (at least 20 of them) is higher; then --into is switched to it in one step, and every server
polling it (transformer-mt-serve --watch_seconds) loads it. The decision is written to CANDIDATE/promotion.json.
Exit status 0 when promoted, 1 when not (with the reasons), 2 for an error.
"""

import argparse

from transformer_mt.commands.cli import command
from transformer_mt.serving.promotion import ALPHA, PAIRED_SAMPLES, PROMOTION_FILE, promote


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
    parser.add_argument("--alpha", type=float, default=ALPHA, help="Significance level (default %(default)s).")
    parser.add_argument("--paired_samples", type=int, default=PAIRED_SAMPLES, help="Bootstrap resamples.")
    parser.add_argument("--source_lang", default="en")
    parser.add_argument("--target_lang", default="de")
    return parser.parse_args(argv)


@command
def main(argv=None):
    args = parse_args(argv)
    decision = promote(args.candidate, args.into, args.held_out_data, args.suggestions_held_out, args.current,
                       args.split, args.max_samples, args.num_beams, args.paired_samples, args.alpha,
                       args.source_lang, args.target_lang)
    print("\n".join(decision.reasons))
    print(f"{'promoted: ' + args.into + ' -> ' + args.candidate if decision.promoted else 'not promoted'} "
          f"(the decision: {args.candidate}/{PROMOTION_FILE})")
    if not decision.promoted:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
