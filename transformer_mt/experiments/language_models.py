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
"""

import argparse
import collections
import dataclasses
import json
import os
import shutil
import textwrap
from pathlib import Path

import torch
from safetensors.torch import save_file

from transformer_mt.calibration import fit
from transformer_mt.data import data_sources
from transformer_mt.evaluation import score, split_pairs, translator
from transformer_mt.experiments.language_data import SHARED_DATA
from transformer_mt.experiments.studies import git_commit
from transformer_mt.hub import sources_markdown
from transformer_mt.machine import matmul_gflops
from transformer_mt.serving.languages import language_name
from transformer_mt.training.averaging import average_weights


REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "results" / "languages"
HELP_ORIGINS = ("lohelp", "gnomehelp")
NUM_BEAMS = 4
CHECK_PAIRS = 100
CARD_WIDTH = 116
EXAMPLES = {
    "de": "Klicken Sie auf Speichern, um die Datei zu sichern.",
    "en": "Click Save to keep the file.",
    "fr": "Cliquez sur Enregistrer pour conserver le fichier.",
    "es": "Haga clic en Guardar para conservar el archivo.",
}
LICENSES_SHOWN = 8  # the card names the commonest licences of the UI catalogues; training_info.json has all
# what a run leaves that the model needs (weights are written apart, in float16)
MODEL_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "terms.tsv")
AIMS = {"ui": 28.0, "help": 30.0}  # issue 52's aims in BLEU (beam 4, default engine)


def other_language(source_lang: str, target_lang: str) -> str:
    """The pair's language other than English (every shipped pair has English on one side)."""
    if "en" not in (source_lang, target_lang) or source_lang == target_lang:
        raise ValueError(f"a language model pairs English with one other language, got {source_lang}-{target_lang}")
    return target_lang if source_lang == "en" else source_lang


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


def card_licenses(sources: list[dict]) -> list[str]:
    """The card's licence tags: each help origin's SPDX id lower-cased, `other` for per-package licences."""
    tags = []
    for source in sources:
        license = (source.get("license") or "").strip()
        tag = (
            license.lower()
            if license and " " not in license and not source["origin"].startswith("gettext:")
            else "other"
        )
        if tag not in tags:
            tags.append(tag)
    return sorted(tags, key=lambda tag: tag == "other")


def sources_section(sources: list[dict]) -> list[str]:
    """The card's data section: a row per help-text origin, and the UI catalogues summed up by licence (each one
    with its licence in training_info.json's `data_sources`)."""
    help_rows = [source for source in sources if not source["origin"].startswith("gettext:")]
    catalogues = [source for source in sources if source["origin"].startswith("gettext:")]
    by_license = collections.Counter(source.get("license") or "not stated" for source in catalogues)
    lines = [*sources_markdown(help_rows)]
    if catalogues:
        common = by_license.most_common(LICENSES_SHOWN)
        rest = len(catalogues) - sum(count for _, count in common)
        pairs = sum(source["pairs"] for source in catalogues)
        sentence = (
            f"And {pairs:,} UI messages of {len(catalogues)} gettext catalogues (text domains) of Debian packages, "
            "each under its package's licence as its `debian/copyright` states it: "
            + ", ".join(f"{license} {count}" for license, count in common)
            + (f", {len(by_license) - len(common)} other licences {rest}" if rest else "")
            + " catalogues. `training_info.json`'s `data_sources` names every catalogue with its licence."
        )
        lines.append(textwrap.fill(sentence, CARD_WIDTH))
    return lines


def shell_lines(command: str) -> str:
    """`command` broken before its options into lines of at most CARD_WIDTH characters, ending in `\\`; a trailing
    comment (after two spaces and `#`) on a line of its own above it."""
    code, _, comment = command.partition("  # ")
    lines = [""]
    for part in code.split(" --"):
        piece = part if not lines[0] else f"--{part}"
        if lines[-1] and len(lines[-1]) + len(piece) + 3 > CARD_WIDTH:
            lines.append("    ")
        lines[-1] += ("" if lines[-1].strip() == "" else " ") + piece
    return (f"# {comment}\n" if comment else "") + " \\\n".join(lines)


def score_rows(sets: dict) -> list[str]:
    """The card's score table rows: the UI test split, the help rows, each origin of the help split."""

    def cells(entry: dict) -> str:
        return (
            f"{entry['pairs']:,} | {entry['scores']['bleu']['score']:.2f} | {entry['scores']['chrf']['score']:.2f} |"
        )

    return [
        f"| UI messages (`{sets['ui']['data']}`, test) | {cells(sets['ui'])}",
        f"| help text ({' and '.join(HELP_ORIGINS)} of `{sets['help']['data']}`, test) | {cells(sets['help'])}",
        *(f"| {origin} | {cells(entry)}" for origin, entry in sets["by_origin"].items()),
    ]


def front_matter(tags: list[str], source: str, target: str) -> str:
    """The card's YAML metadata: licences, languages, tags."""
    lines = ["---", "license:", *(f"- {tag}" for tag in tags)]
    if "other" in tags:
        lines.append("license_name: each origin's licence below; other: each Debian package's own")
    return "\n".join(
        [*lines, "language:", f"- {source}", f"- {target}", "tags:", "- translation", "- transformer-mt", "---"]
    )


def card(model: Path, report: dict) -> str:
    """The model card (README.md) from the model's own files and `report` (scores.json)."""
    info = json.loads((model / "training_info.json").read_text(encoding="utf-8"))
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    calibration = json.loads((model / "calibration.json").read_text(encoding="utf-8"))
    source, target = config["source_lang"], config["target_lang"]
    names = language_name(source), language_name(target)
    reads = [
        *(
            ["a message's context (msgctxt) as its second segment (`context=`)"]
            if config.get("source_context")
            else []
        ),
        *(["a formality tag (`formality=more|less|...`)"] if config.get("formality_tags") else []),
    ]
    rows = score_rows(report["sets"])
    recipe = info.get("recipe", {})
    front = front_matter(card_licenses(info["data_sources"]), source, target)
    intro = textwrap.fill(
        f"A {names[0]}→{names[1]} TransformerMT model (d_model {config['d_model']}, {config['encoder_layers']}+"
        f"{config['decoder_layers']} layers, {config['position_embedding_type']} positions) trained once, from "
        f"scratch, by the project's own training script on ../shared/data's {names[0 if source != 'en' else 1]}-"
        f"English help text and UI messages: {recipe.get('steps', 0):,} steps of {recipe.get('batch', '?')}, with a "
        "share of its pairs upper-cased, title-cased, with placeholders as span tokens and with term annotations"
        + ("; it reads " + " and ".join(reads) if reads else "")
        + ". Made by `transformer_mt.experiments.language_models`, which wrote this card from `scores.json`, "
        "`training_info.json` and `calibration.json`.",
        CARD_WIDTH,
    )
    scores_intro = textwrap.fill(
        f"Beam {report['num_beams']}, the default engine (transformers' `generate`), each source whole and without "
        f"its context, at commit {report['commit'][:7]} on a machine whose fp32 2048x2048 matmul read "
        f"{report['gflops']} GFLOP/s (2 threads); issue 52's aims are {AIMS['ui']:g} BLEU on the UI messages and "
        f"{AIMS['help']:g} on the help text:",
        CARD_WIDTH,
    )
    body = f"""
# {model.name} (shipped with the repository)

{intro}

```python
import transformer_mt  # registers the model, its tokenizer and the "translation" pipeline
from transformers import pipeline

translator = pipeline("translation", model="models/{model.name}")
translator(["{EXAMPLES[source]}"])
```

## Scores

{scores_intro}

| test set | pairs | BLEU | chrF |
| --- | ---: | ---: | ---: |
{chr(10).join(rows)}

## Data

{chr(10).join(sources_section(info["data_sources"])).strip()}

## How it was made

```bash
python -m transformer_mt.experiments.language_data --language {other_language(source, target)} --output runs/data/en-{
        other_language(source, target)
    }
# from a worktree pinned at {report["training"]["commit"]} (docs/results/languages/README.md):
{shell_lines(report["training"]["command"])}
{shell_lines(report["command"])}
```

## Confidence

`calibration.json`: P(chrF >= {calibration["chrf_threshold"]:g}) fitted on {calibration["pairs"]:,} pairs of
{calibration["fitted_on"]}; Spearman with sentence chrF {calibration["measured"]["spearman"]}; precision at coverage
{", ".join(f"{coverage} {value}" for coverage, value in calibration["measured"]["precision"].items())}.
"""
    return front + "\n" + body


def ship(run: Path, source_lang: str, target_lang: str, output: Path, data: Path | None, command: str) -> dict:
    """Make the shipped model of `run` in `output` (see the module docstring); returns its scores.json."""
    language = other_language(source_lang, target_lang)
    progress = json.loads((RESULTS / f"{source_lang}-{target_lang}-progress.json").read_text(encoding="utf-8"))
    half_precision_copy(run, output)
    info_path = output / "training_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info["data_sources"] = licensed_sources(info["data_sources"], language)
    info_path.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    data = data or REPO / "runs" / "data" / f"en-{language}"
    calibration = fit(str(output), str(data), "validation", source_lang=source_lang, target_lang=target_lang)
    dataclasses.replace(calibration, fitted_on=f"{os.path.relpath(data, REPO)} (validation)").save(str(output))
    report = {
        "command": command,
        "commit": git_commit()[:7],
        "gflops": round(matmul_gflops(), 1),
        "training": {key: progress[key] for key in ("commit", "command")},
        "engine": "generate",
        "num_beams": NUM_BEAMS,
        "sets": test_scores(output, source_lang, target_lang, language),
    }
    (output / "scores.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (output / "README.md").write_text(card(output, report), encoding="utf-8")
    return report


# the en->de models' UI test scores, measured when each was fine-tuned (their scores.json holds data/en-de's test)
EN_DE_UI = {
    "transformer-mt-en-de": "docs/results/help_ui/new-en-de-ui.json",
    "transformer-mt-en-de-broad": "docs/results/broad_ui/new-en-de-ui.json",
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
        )
    )
    if args.card_only:
        report = json.loads((args.output / "scores.json").read_text(encoding="utf-8"))
        (args.output / "README.md").write_text(card(args.output, report), encoding="utf-8")
        return
    report = ship(args.run, args.source_lang, args.target_lang, args.output, args.data, command)
    print(json.dumps(report["sets"], indent=2))


__all__ = [
    "card",
    "card_licenses",
    "front_matter",
    "half_precision_copy",
    "languages_table",
    "licensed_sources",
    "other_language",
    "score_rows",
    "shell_lines",
    "shipped_scores",
    "ship",
    "sources_section",
    "test_scores",
    "test_sets",
]


if __name__ == "__main__":
    main()
