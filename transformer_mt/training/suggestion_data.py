"""The data of a fine-tune on accepted suggestions (`--suggestions`): the suggestions (as `transformer-mt-suggestions
export` writes them), a share of them held out for the promotion test and saved beside the model, the rest repeated
and mixed with a replay sample of the served model's original training data (`--replay_data`), so that it learns
the corrections without forgetting what it knew.

The mix of one epoch: each trained suggestion `--suggestion_repeats` times, and `--replay_ratio` replay pairs for
each of those (drawn without replacement from the replay data's train split, at most all of it), shuffled; every
draw from --data_seed (else --seed). Held-out suggestions are chosen by source text (normalised: case and spaces
folded), so that no held-out source is ever trained on, even when two suggestions share it.
"""

import json
import logging
import os

import datasets as hf_datasets
import numpy as np

from ..data import load_parallel_data


logger = logging.getLogger(__name__)

DEFAULT_REPLAY_RATIO = 1.0  # replay pairs per (repeated) suggestion pair: half of the mix is the original data
DEFAULT_SUGGESTION_REPEATS = 2  # each trained suggestion is seen twice an epoch: corrections are few, replay is many
DEFAULT_HELD_OUT_SHARE = 0.1  # of the suggestions, never trained on: the promotion test's second half
HELD_OUT_FILE = "suggestions_held_out.tsv"  # beside the fine-tuned model, in the export's layout
MIX_FILE = "suggestions_mix.json"  # beside the fine-tuned model: what the mix was made of


def normalised(text: str) -> str:
    """A source as the held-out split groups it: case and runs of spaces folded."""
    return " ".join(text.split()).casefold()


def held_out_rows(sources: list[str], share: float, seed: int) -> set[int]:
    """The rows to hold out: about `share` of the distinct normalised sources, drawn from `seed`, with every row of
    each source drawn."""
    groups: dict[str, list[int]] = {}
    for row, source in enumerate(sources):
        groups.setdefault(normalised(source), []).append(row)
    keys = list(groups)
    count = round(share * len(keys))
    drawn = np.random.default_rng(seed).permutation(len(keys))[:count]
    return {row for index in drawn.tolist() for row in groups[keys[index]]}


def write_pairs(path: str, sources: list[str], targets: list[str], source_lang: str, target_lang: str) -> None:
    """Pairs as `transformer-mt-suggestions export` writes them: a header of the two language codes, then
    source<TAB>target a line (written whole: staged and renamed)."""
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(f"{source_lang}\t{target_lang}\n")
        f.writelines(f"{source}\t{target}\n" for source, target in zip(sources, targets))
    os.replace(partial, path)


def read_suggestions(path: str, source_lang: str, target_lang: str) -> hf_datasets.Dataset:
    """The pairs of an exported suggestions file (a header naming the two languages; `data.load_parallel_data`)."""
    return load_parallel_data({"train": path}, source_lang, target_lang)["train"]


def replay_sample(replay: hf_datasets.Dataset, wanted: int, seed: int) -> hf_datasets.Dataset:
    """`wanted` pairs drawn without replacement from `replay` (all of it when it holds fewer, with a warning)."""
    if wanted > len(replay):
        logger.warning(
            f"--replay_ratio asks for {wanted} replay pairs; the replay data holds {len(replay)}: all "
            "of them are used."
        )
        wanted = len(replay)
    return replay.select(np.random.default_rng(seed + 1).permutation(len(replay))[:wanted].tolist())


def suggestion_splits(data_args, training_args, setup) -> hf_datasets.DatasetDict:
    """The splits of a fine-tune on suggestions: train is the mix (see the module), validation and test the replay
    data's (when it has them); the held-out suggestions and the mix's record are written into output_dir."""
    if not setup.model_name_or_path:
        raise ValueError("--suggestions fine-tunes a served model: give it with --model_name_or_path.")
    source_lang, target_lang = data_args.source_lang, data_args.target_lang
    seed = training_args.data_seed if training_args.data_seed is not None else training_args.seed
    suggestions = read_suggestions(data_args.suggestions, source_lang, target_lang)
    held = held_out_rows(suggestions[source_lang], data_args.suggestions_held_out_share, seed)
    trained = suggestions.select([row for row in range(len(suggestions)) if row not in held])
    if not len(trained):
        raise ValueError(
            f"--suggestions {data_args.suggestions}: no suggestion is left to train on after "
            f"--suggestions_held_out_share {data_args.suggestions_held_out_share}."
        )
    replay_splits = load_parallel_data(data_args.replay_data, source_lang, target_lang)
    if "train" not in replay_splits:
        raise ValueError(f"--replay_data {data_args.replay_data} has no train split to replay.")
    repeated = hf_datasets.concatenate_datasets([trained] * data_args.suggestion_repeats)
    replay = replay_sample(replay_splits["train"], round(data_args.replay_ratio * len(repeated)), seed)
    mix = hf_datasets.concatenate_datasets([repeated, replay]).shuffle(seed=seed)
    if training_args.process_index == 0:
        os.makedirs(training_args.output_dir, exist_ok=True)
        rows = sorted(held)
        write_pairs(
            os.path.join(training_args.output_dir, HELD_OUT_FILE),
            [suggestions[source_lang][row] for row in rows],
            [suggestions[target_lang][row] for row in rows],
            source_lang,
            target_lang,
        )
        record = {
            "suggestions": data_args.suggestions,
            "suggestion_pairs": len(suggestions),
            "held_out": len(held),
            "held_out_share": data_args.suggestions_held_out_share,
            "held_out_file": HELD_OUT_FILE,
            "trained": len(trained),
            "repeats": data_args.suggestion_repeats,
            "replay_data": data_args.replay_data,
            "replay_ratio": data_args.replay_ratio,
            "replay_pairs": len(replay),
            "mix_pairs": len(mix),
            "seed": seed,
        }
        with open(os.path.join(training_args.output_dir, MIX_FILE), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2, ensure_ascii=False)
    logger.warning(
        f"Fine-tuning on {len(trained)} suggestions x {data_args.suggestion_repeats} and {len(replay)} "
        f"replay pairs; {len(held)} suggestions held out in {HELD_OUT_FILE}."
    )
    return hf_datasets.DatasetDict(
        {"train": mix, **{split: replay_splits[split] for split in ("validation", "test") if split in replay_splits}}
    )


__all__ = [
    "DEFAULT_HELD_OUT_SHARE",
    "DEFAULT_REPLAY_RATIO",
    "DEFAULT_SUGGESTION_REPEATS",
    "HELD_OUT_FILE",
    "MIX_FILE",
    "held_out_rows",
    "normalised",
    "read_suggestions",
    "replay_sample",
    "suggestion_splits",
    "write_pairs",
]
