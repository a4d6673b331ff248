"""A language model's card (README.md), written from its own files (issue 52): its scores (`scores.json`, written by
`experiments.language_models`), its training data with each origin's licence and its recipe (`training_info.json`),
its confidence's fit (`calibration.json`) and the commands that made it; never by hand, so that a test can write it
again and compare.
"""

import collections
import json
import textwrap
from pathlib import Path

from transformer_mt.hub import sources_markdown
from transformer_mt.serving.languages import language_name


HELP_ORIGINS = ("lohelp", "gnomehelp")
AIMS = {"ui": 28.0, "help": 30.0}  # issue 52's aims in BLEU (beam 4, default engine)
SET_NAMES = {"ui": "UI messages", "help": "help text"}
CARD_WIDTH = 116
LICENSES_SHOWN = 8  # the card names the commonest licences of the UI catalogues; training_info.json has all
EXAMPLES = {
    "de": "Klicken Sie auf Speichern, um die Datei zu sichern.",
    "en": "Click Save to keep the file.",
    "fr": "Cliquez sur Enregistrer pour conserver le fichier.",
    "es": "Haga clic en Guardar para conservar el archivo.",
}


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
        lines.append(
            "license_name: each origin's licence as the card's Data section gives it, and each Debian package's own"
        )
    return "\n".join(
        [*lines, "language:", f"- {source}", f"- {target}", "tags:", "- translation", "- transformer-mt", "---"]
    )


def introduction(config: dict, info: dict) -> str:
    """The card's first paragraph: the model, its training, what it reads, and any fine-tune."""
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
    recipe = info.get("recipe", {})
    return textwrap.fill(
        f"{'An' if names[0][0] in 'AEIOU' else 'A'} {names[0]}→{names[1]} TransformerMT model (d_model "
        f"{config['d_model']}, {config['encoder_layers']}+"
        f"{config['decoder_layers']} layers, {config['position_embedding_type']} positions) trained once, from "
        f"scratch, by the project's own training script on ../shared/data's {names[0 if source != 'en' else 1]}-"
        f"English help text and UI messages: {recipe.get('steps', 0):,} steps of {recipe.get('batch', '?')}, with a "
        "share of its pairs upper-cased, title-cased, with placeholders as span tokens and with term annotations"
        + ("; it reads " + " and ".join(reads) if reads else "")
        + fine_tune_clause(info.get("fine_tune"))
        + ". Made by `transformer_mt.experiments.language_models`, which wrote this card from `scores.json`, "
        "`training_info.json` and `calibration.json`.",
        CARD_WIDTH,
    )


def card(model: Path, report: dict) -> str:
    """The model card (README.md) from the model's own files and `report` (scores.json)."""
    info = json.loads((model / "training_info.json").read_text(encoding="utf-8"))
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    calibration = json.loads((model / "calibration.json").read_text(encoding="utf-8"))
    source, target = config["source_lang"], config["target_lang"]
    rows = score_rows(report["sets"])
    front = front_matter(card_licenses(info["data_sources"]), source, target)
    intro = introduction(config, info)
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
{shell_lines(report["training"]["command"])}{fine_tune_commands(report.get("fine_tune"))}
{shell_lines(report["command"])}
```
{fine_tune_section(report.get("fine_tune"), report["sets"])}
## Confidence

`calibration.json`: P(chrF >= {calibration["chrf_threshold"]:g}) fitted on {calibration["pairs"]:,} pairs of
{calibration["fitted_on"]}; Spearman with sentence chrF {calibration["measured"]["spearman"]}; precision at coverage
{", ".join(f"{coverage} {value}" for coverage, value in calibration["measured"]["precision"].items())}.
"""
    return front + "\n" + body


def fine_tune_clause(fine_tune: dict | None) -> str:
    """The intro's words for a fine-tune (training_info's `fine_tune`), or none."""
    if not fine_tune:
        return ""
    words = "; then fine-tuned"
    if steps := fine_tune.get("recipe", {}).get("steps"):
        words += f" {steps:,} steps"
    if data := fine_tune.get("data"):
        words += f" on `{data}`"
    if share := fine_tune.get("side_constraints", {}).get("formality_share"):
        tagged = "every pair" if share == 1 else f"{share:.0%} of the pairs"
        words += f", {tagged} addressing the reader tagged with its register"
    return words


def fine_tune_commands(fine_tune: dict | None) -> str:
    """The fine-tune's commands for "How it was made" (each of `command`'s ` && `-joined ones), or none."""
    if not fine_tune:
        return ""
    commands = "\n".join(shell_lines(command) for command in fine_tune["command"].split(" && "))
    return f"\n# fine-tuned from a worktree pinned at {fine_tune['commit']}:\n{commands}"


def fine_tune_section(fine_tune: dict | None, sets: dict) -> str:
    """The card's before/after table of a fine-tune (scores.json's `fine_tune`), or none."""
    if not fine_tune:
        return ""
    before = fine_tune["before"]
    rows = [
        f"| {SET_NAMES[name]} | {before[name]['bleu']['score']:.2f} | {sets[name]['scores']['bleu']['score']:.2f} | "
        f"{before[name]['chrf']['score']:.2f} | {sets[name]['scores']['chrf']['score']:.2f} |"
        for name in SET_NAMES
    ]
    return (
        '\n## Before and after the fine-tune\n\nThe same test sets, engine and beam; "before" was measured at '
        f"commit {before['commit'][:7]}:\n\n| test set | BLEU before | BLEU after | chrF before | chrF after |\n"
        "| --- | ---: | ---: | ---: | ---: |\n" + "\n".join(rows) + "\n"
    )


def other_language(source_lang: str, target_lang: str) -> str:
    """The pair's language other than English (every shipped pair has English on one side)."""
    if "en" not in (source_lang, target_lang) or source_lang == target_lang:
        raise ValueError(f"a language model pairs English with one other language, got {source_lang}-{target_lang}")
    return target_lang if source_lang == "en" else source_lang


__all__ = ["card", "card_licenses", "front_matter", "other_language", "score_rows", "shell_lines", "sources_section"]
