"""A language pair's shipped model made from its training run (issue 52): the run's weights in float16 with its
tokenizer, configs and mined terms, its confidence fitted on its own validation split, its scores on the test
splits the issue names (beam 4, the default engine), and a card written from those files, never by hand.

    python -m transformer_mt.experiments.language_models --run runs/de-en --source_lang de --target_lang en \\
        --commit 9b8a081 --output models/transformer-mt-de-en

- **Weights**: the run's own output (the average of its last checkpoints where that validated at least as well,
  `training_info.json`'s `averaging`), stored as float16 (loaded back into float32, exactly).
- **Confidence**: `calibration.fit` on the pair corpus's validation split (`experiments.language_data`: UI messages
  and help text interleaved), the length band from its train split.
- **Scores** (`scores.json`): the UI test split of ../shared/data/en-X-ui, read the other way for X→en; the help
  text's test rows: `data/en-de`'s (all LibreOffice and GNOME help) for German, ../shared/data/en-X's lohelp and
  gnomehelp rows for the others, with each origin of that split apart (ddtp included). Each source whole, without
  its context: the context and formality figures are `experiments.context_study`'s. `check` holds the first
  `CHECK_PAIRS` UI pairs' sources, translations and scores, which the tests translate again.
- **Card** (`README.md`): the scores, the data's origins with their licences (../shared/data's cards and each UI
  catalogue's `licenses.tsv`), the commands that made it, and what the model reads (context, formality tags).
- **Fine-tunes** (`--fine_tune_of`): a run that fine-tuned a shipped model (en→fr's formality fine-tune) ships
  with that model's training record and data kept, its own added, and the UI and help scores before it.
"""

import argparse
import dataclasses
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from transformer_mt.calibration import fit
from transformer_mt.data import data_sources
from transformer_mt.evaluation import score, split_pairs, translator
from transformer_mt.experiments.language_data import SHARED_DATA
from transformer_mt.experiments.model_cards import HELP_ORIGINS, SET_NAMES, card, other_language
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.training.averaging import average_weights


REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results" / "languages"
NUM_BEAMS = 4
CHECK_PAIRS = 100
# what a run leaves that the model needs (weights are written apart, in float16)
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "terms.tsv")


def half_precision_copy(run: Path, output: Path) -> None:
    """The run's model in `output`: its weights as float16, its configs, tokenizer, terms and training_info."""
    if output.exists() and any(output.iterdir()):
        raise FileExistsError(f"--output {output} is not empty; remove it first")
    weights = average_weights([run], torch.float16)
    output.mkdir(parents=True, exist_ok=True)
    for name in (*MODEL_FILES, "training_info.json"):
        if (run / name).is_file():
            shutil.copy2(run / name, output / name)
    save_file(weights, output / "model.safetensors", metadata={"format": "pt"})


def licensed_sources(sources: list[dict], language: str, shared_data: Path = SHARED_DATA) -> list[dict]:
    """The run's `data_sources` (origin, pairs) with each origin's licence and description from ../shared/data's
    corpus cards and UI catalogues' licenses.tsv (the run's own data folder carries neither)."""
    known = {}
    for folder in (f"en-{language}", f"en-{language}-ui"):
        known.update({entry["origin"]: entry for entry in data_sources(str(shared_data / folder))})
    return [
        {
            **source,
            "license": known.get(source["origin"], {}).get("license"),
            "what": known.get(source["origin"], {}).get("what"),
        }
        for source in sources
    ]


def test_sets(language: str, shared_data: Path = SHARED_DATA) -> dict[str, Path]:
    """The test data of a pair: the UI corpus, and the help text (the repository's data/en-de for German)."""
    help_text = REPO / "data" / "en-de" if language == "de" else shared_data / f"en-{language}"
    return {"ui": shared_data / f"en-{language}-ui", "help": help_text}


def scored(hypotheses: list[str], references: list[str], rows: list[int]) -> dict:
    """BLEU and chrF (with their signatures) of the `rows` of `hypotheses` against their references."""
    picked = [hypotheses[i] for i in rows], [references[i] for i in rows]
    return {"pairs": len(rows), "scores": score(*picked, metrics=("bleu", "chrf"))}


def test_scores(model: Path, source_lang: str, target_lang: str, language: str) -> dict:
    """scores.json's sets: the UI test split, the help rows (HELP_ORIGINS) and each origin of the help split."""
    translate = translator(str(model), num_beams=NUM_BEAMS, batch_size=32)
    sets, paths = {}, test_sets(language)
    for name, data in paths.items():
        pairs, sources, references = split_pairs(str(data), "test", source_lang, target_lang, extra_columns=["origin"])
        hypotheses = translate(sources)
        origins = list(pairs["origin"])
        where = {"data": os.path.relpath(data, REPO), "split": "test"}
        if name == "ui":
            sets["ui"] = {**where, **scored(hypotheses, references, range(len(sources)))}
            first = range(min(CHECK_PAIRS, len(sources)))
            sets["check"] = {
                **scored(hypotheses, references, first),
                "sources": [sources[i] for i in first],
                "hypotheses": [hypotheses[i] for i in first],
            }
            continue
        rows = [i for i, origin in enumerate(origins) if origin in HELP_ORIGINS]
        sets["help"] = {**where, "origins": list(HELP_ORIGINS), **scored(hypotheses, references, rows)}
        sets["by_origin"] = {
            origin: {**where, **scored(hypotheses, references, [i for i, o in enumerate(origins) if o == origin])}
            for origin in dict.fromkeys(origins)
        }
    return sets


# what a fine-tune's training_info adds to its model's (the data and licences are the first training's)
FINE_TUNE_INFO = ("data", "recipe", "augmentation", "side_constraints", "training_pairs", "averaging")


def earlier_model(model: Path) -> dict:
    """What a fine-tuned model keeps of the shipped model it was fine-tuned from: its training_info and scores.
    Refused by name: a model this module did not ship (its scores.json lacks `training` and the `SET_NAMES` sets: the
    en→de models), and a fine-tune already (a second would drop the first's commands from the card)."""
    found = {
        name: json.loads((model / f"{name}.json").read_text(encoding="utf-8")) for name in ("training_info", "scores")
    }
    if "training" not in found["scores"] or not set(SET_NAMES) <= set(found["scores"].get("sets", {})):
        raise ValueError(
            f"--fine_tune_of {model}: its scores.json was not written by this module (it lacks 'training' and the "
            f"{' and '.join(SET_NAMES)} sets); only the language models it shipped can take a fine-tune through it"
        )
    if "fine_tune" in found["training_info"]:
        raise ValueError(
            f"--fine_tune_of {model} is a fine-tune already; shipping another would drop the first's commands from "
            "its card"
        )
    return found


def ship(
    run: Path,
    source_lang: str,
    target_lang: str,
    output: Path,
    data: Path | None,
    command: str,
    fine_tune_of: Path | None = None,
) -> dict:
    """Make the shipped model of `run` in `output` (see the module docstring); returns its scores.json. A run that
    fine-tuned a shipped model (`fine_tune_of`) keeps that model's training record and data, adds its own
    (`{pair}-fine-tune-progress.json`) and the scores before. When `fine_tune_of` is `output`, the new model is built
    beside it and takes its place only once whole: a failure leaves the shipped model as it was."""
    language, pair = other_language(source_lang, target_lang), f"{source_lang}-{target_lang}"
    earlier = earlier_model(fine_tune_of) if fine_tune_of else None
    progress_path = RESULTS / f"{pair}{'-fine-tune' if earlier else ''}-progress.json"
    progress = json.loads(progress_path.read_text(encoding="utf-8"))
    replacing = fine_tune_of is not None and fine_tune_of.resolve() == output.resolve()
    built = output.with_name(f"{output.name}.new") if replacing else output
    half_precision_copy(run, built)
    info_path = built / "training_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    if earlier:
        info = {**earlier["training_info"], "fine_tune": {key: info[key] for key in FINE_TUNE_INFO if key in info}}
    else:
        info["data_sources"] = licensed_sources(info["data_sources"], language)
    info_path.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    data = data or REPO / "runs" / "data" / f"en-{language}"
    calibration = fit(str(built), str(data), "validation", source_lang=source_lang, target_lang=target_lang)
    dataclasses.replace(calibration, fitted_on=f"{os.path.relpath(data, REPO)} (validation)").save(str(built))
    record = {key: progress[key] for key in ("commit", "command")}
    report = {
        "command": command,
        "commit": git_commit()[:7],
        "gflops": round(matmul_gflops(), 1),
        "training": earlier["scores"]["training"] if earlier else record,
        "engine": "generate",
        "num_beams": NUM_BEAMS,
        "sets": test_scores(built, source_lang, target_lang, language),
    }
    if earlier:
        before = earlier["scores"]
        sets = {name: before["sets"][name]["scores"] for name in SET_NAMES}
        report["fine_tune"] = {**record, "before": {"commit": before["commit"], **sets}}
    (built / "scores.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if replacing:
        replaced = output.with_name(f"{output.name}.replaced")
        output.rename(replaced)
        built.rename(output)
        shutil.rmtree(replaced)
    (output / "README.md").write_text(card(output, report), encoding="utf-8")
    return report


# the en->de models' UI test scores, measured after their formality fine-tune (their scores.json holds data/en-de's
# test)
EN_DE_UI = {
    "transformer-mt-en-de": "docs/results/en_de_formality/help-en-de-ui.json",
    "transformer-mt-en-de-broad": "docs/results/en_de_formality/broad-en-de-ui.json",
}


def shipped_scores(model: Path) -> dict[str, float]:
    """A shipped model's BLEU on its UI test split and its help rows (beam 4), from its files and, for the two
    en->de models, docs/results/."""
    report = json.loads((model / "scores.json").read_text(encoding="utf-8"))
    if "sets" in report:
        return {name: report["sets"][name]["scores"]["bleu"]["score"] for name in ("ui", "help")}
    ui = json.loads((REPO / EN_DE_UI[model.name]).read_text(encoding="utf-8"))
    return {"ui": ui["scores"]["bleu"]["score"], "help": report["scores"]["bleu"]["score"]}


def languages_table(models: Path = REPO / "models") -> list[str]:
    """docs/languages.md's table: every shipped model, its pair, BLEU on its UI and help test splits, weights'
    size and what it reads besides the text."""
    rows = [
        "| model | pair | UI messages BLEU | help text BLEU | weights | reads |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for model in sorted(path for path in models.iterdir() if (path / "scores.json").is_file()):
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
        scores = shipped_scores(model)
        reads = [
            name for name, key in (("context", "source_context"), ("formality", "formality_tags")) if config.get(key)
        ]
        rows.append(
            f"| `models/{model.name}` | {config['source_lang']}→{config['target_lang']} | {scores['ui']:.1f} | "
            f"{scores['help']:.1f} | {(model / 'model.safetensors').stat().st_size / 2**20:.1f} MB | "
            f"{', '.join(reads) or 'text'} |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="the training run's output directory")
    parser.add_argument("--source_lang")
    parser.add_argument("--target_lang")
    parser.add_argument("--output", type=Path, help="the model directory to write (empty or new)")
    parser.add_argument("--data", type=Path, help="the pair corpus (default runs/data/en-X) for the calibration")
    parser.add_argument(
        "--fine_tune_of", type=Path, help="the shipped model the run fine-tuned (may be --output: replaced)"
    )
    parser.add_argument("--card_only", action="store_true", help="write README.md again from the model's files")
    parser.add_argument("--table", action="store_true", help="print docs/languages.md's table of shipped models")
    args = parser.parse_args(argv)
    if args.table:
        print("\n".join(languages_table()))
        return
    missing = [f"--{name}" for name in ("run", "source_lang", "target_lang", "output") if not getattr(args, name)]
    if missing and not (args.card_only and args.output):
        parser.error(f"making a model needs {', '.join(missing)} (or --table; --card_only needs --output)")
    command = "python -m transformer_mt.experiments.language_models " + " ".join(
        f"--{key} {value}"
        for key, value in (
            ("run", args.run),
            ("source_lang", args.source_lang),
            ("target_lang", args.target_lang),
            ("output", args.output),
            *([("fine_tune_of", args.fine_tune_of)] if args.fine_tune_of else []),
        )
    )
    if args.card_only:
        report = json.loads((args.output / "scores.json").read_text(encoding="utf-8"))
        (args.output / "README.md").write_text(card(args.output, report), encoding="utf-8")
        return
    report = ship(args.run, args.source_lang, args.target_lang, args.output, args.data, command, args.fine_tune_of)
    print(json.dumps(report["sets"], indent=2))


__all__ = [
    "half_precision_copy",
    "languages_table",
    "licensed_sources",
    "other_language",
    "shipped_scores",
    "ship",
    "test_scores",
    "test_sets",
]


if __name__ == "__main__":
    main()
