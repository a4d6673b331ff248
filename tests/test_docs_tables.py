"""Every table of README.md, docs/*.md and the model cards is accounted for: a table of measured figures is built
by a test from the JSON its figures were written to (docs/results/, or the model folder's scores.json and
training_info.json) and found on its page; every other table is reference (flags, layers, formats, defaults) and
listed as such. A new table is in neither list until someone says which it is."""

import ast
import json
import re
from dataclasses import dataclass

from .utils import REPO


RESULTS = REPO / "docs" / "results"
MODELS = REPO / "models"
PAGES = {
    path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted(MODELS.glob("*/README.md"))]
}
HELP_CARD, BROAD_CARD = "models/transformer-mt-en-de/README.md", "models/transformer-mt-en-de-broad/README.md"
RULE = re.compile(r"^\s*\|(\s*:?-+:?\s*\|)+\s*$")


@dataclass
class Table:
    page: str
    heading: str
    header: str
    rows: list[str]


def tables(page: str) -> list[Table]:
    """Every Markdown table of a page outside code blocks (a header row, then a `| --- |` rule), under the heading
    it sits in."""
    found, heading, fenced = [], "", False
    lines = PAGES[page].splitlines()
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            continue
        elif line.startswith("#"):
            heading = line
        elif line.lstrip().startswith("|") and number + 1 < len(lines) and RULE.match(lines[number + 1]):
            rows = []
            for row in lines[number + 2 :]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append(row.strip())
            found.append(Table(page, heading, line.strip(), rows))
    return found


def read(name: str) -> dict:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


# (page, heading, the header row's start, tables there, the test that builds them from their JSON). A name alone
# is a test of this module; "file::name" one of another test module, kept beside the code that writes the table.
# the language models' cards are written from their files, and a test writes each again and compares
LANGUAGE_CARD_TEST = (
    "test_language_models.py::test_a_shipped_language_model_is_small_half_precision_of_its_pair_and_calibrated"
)
FIGURES = [
    (
        "README.md",
        "## Quick start",
        "| source | translation",
        1,
        "test_shipped_model.py::test_the_readme_examples_are_its_translations",
    ),
    ("README.md", "## Quick start", "| model | knows |", 1, "test_the_models_table_is_their_scores"),
    (
        "README.md",
        "## Quick start",
        "| model | pair |",
        1,
        "test_language_models.py::test_the_languages_table_lists_every_shipped_model_as_its_files_say",
    ),
    (
        "docs/languages.md",
        "## The shipped models",
        "| model | pair |",
        1,
        "test_language_models.py::test_the_languages_table_lists_every_shipped_model_as_its_files_say",
    ),
    ("README.md", "## Results", "| engine | sentences/s | BLEU |", 1, "test_the_engine_tables_are_their_json"),
    ("docs/languages.md", "## Pairs through English", "| pair | messages |", 1, "test_the_pivot_table_is_its_json"),
    (
        "docs/results.md",
        "## The main job",
        "| seed | test BLEU |",
        12,
        "test_the_main_job_tables_are_the_shipped_runs",
    ),
    ("docs/results.md", "## The main job", "| seed | step |", 1, "test_the_span_tokens_same_step_table_is_its_json"),
    (
        "docs/results.md",
        "## The main job",
        "| source | translation (seed 0) |",
        1,
        "test_the_seed_0_examples_are_its_summarys",
    ),
    (
        "docs/results.md",
        "## A moving average of the weights",
        "| seed | without EMA |",
        1,
        "test_the_ema_table_is_its_json",
    ),
    (
        "docs/results.md",
        "## The recipe: a translator in every seed",
        "| candidate | positions | seed 0 |",
        1,
        "test_recipe_search.py::test_the_readme_table_is_the_shipped_search",
    ),
    (
        "docs/results.md",
        "## The recipe: a translator in every seed",
        "| positions | seed 0 |",
        1,
        "test_position_study.py::test_the_readme_tables_are_the_shipped_studys_own",
    ),
    (
        "docs/results.md",
        "### Joined pairs: does a model learn to write every sentence?",
        "| candidate |",
        1,
        "test_recipe_search.py::test_the_joined_table_in_the_docs_is_the_shipped_joined_search",
    ),
    (
        "docs/results.md",
        "### Plain: trained on single sentences",
        "| set |",
        1,
        "test_position_study.py::test_the_readme_tables_are_the_shipped_studys_own",
    ),
    (
        "docs/results.md",
        "### Trained with joined pairs: the length question",
        "| set |",
        1,
        "test_position_study.py::test_the_readme_tables_are_the_shipped_studys_own",
    ),
    (
        "docs/results.md",
        "### Trained with joined pairs: the length question",
        "| positions | seeds |",
        1,
        "test_position_study.py::test_the_readme_tables_are_the_shipped_studys_own",
    ),
    ("docs/results.md", "### Position types", "| | sinusoidal |", 1, "test_the_benchmark_tables_are_their_json"),
    ("docs/results.md", "### Token batches", "| batches |", 1, "test_the_benchmark_tables_are_their_json"),
    (
        "docs/results.md",
        "### Inline markup through whole sentences",
        "| tag kind |",
        1,
        "test_the_markup_tables_are_the_studys_json",
    ),
    (
        "docs/results.md",
        "### Inline markup through whole sentences",
        "| commit | change |",
        1,
        "test_the_markup_tables_are_the_studys_json",
    ),
    ("docs/results.md", "### Protected spans", "| test split | messages |", 1, "test_the_span_tables_are_their_json"),
    ("docs/results.md", "### Capitals", "| inputs |", 1, "test_the_capitals_tables_are_their_json"),
    (
        "docs/results.md",
        "### The broader model fine-tuned on UI messages",
        "| inputs |",
        1,
        "test_the_capitals_tables_are_their_json",
    ),
    (
        "docs/results.md",
        "### The broader model fine-tuned on UI messages",
        "| test split | messages |",
        1,
        "test_the_span_tables_are_their_json",
    ),
    (
        "docs/results.md",
        "### The help-text model fine-tuned with the augmentations",
        "| inputs |",
        1,
        "test_the_capitals_tables_are_their_json",
    ),
    (
        "docs/results.md",
        "### Training-time augmentations, screened",
        "| candidate | seed |",
        2,
        "test_the_screen_tables_are_their_json",
    ),
    ("docs/serving.md", "## Suggestions", "| split |", 1, "test_the_suggestion_filter_table_is_its_json"),
    (
        "docs/serving.md",
        "## Suggestions that teach the model",
        "| set | shipped model |",
        1,
        "test_the_promotion_table_is_its_json",
    ),
    ("docs/serving.md", "## Batching and load", "| load |", 1, "test_the_load_tables_are_their_json"),
    ("docs/serving.md", "## Several processes", "| server |", 1, "test_the_load_tables_are_their_json"),
    (
        "docs/translation.md",
        "## Engines: generate() and CTranslate2",
        "| engine, threads |",
        1,
        "test_the_engine_tables_are_their_json",
    ),
    (
        "docs/translation.md",
        "## Trust: confidence, guards, abstaining",
        "| model |",
        1,
        "test_the_trust_table_is_its_json",
    ),
    ("docs/translation.md", "## A glossary", "| model |", 1, "test_the_term_test_table_is_its_json"),
    (
        BROAD_CARD,
        "## Data",
        "| origin | training pairs |",
        1,
        "test_shipped_model.py::test_the_broader_models_card_names_every_source_it_was_trained_on",
    ),
    (
        BROAD_CARD,
        "## Fine-tuned on UI messages",
        "| origin | training pairs |",
        1,
        "test_shipped_model.py::test_the_broader_models_card_names_every_source_it_was_trained_on",
    ),
    (BROAD_CARD, "## Scores", "| BLEU | chrF |", 1, "test_the_cards_scores_are_their_scores_json"),
    (
        BROAD_CARD,
        "## Scores",
        "| test set | pairs |",
        1,
        "test_shipped_model.py::test_the_cards_give_the_scores_before_and_after_each_fine_tune",
    ),
    (
        HELP_CARD,
        "## Fine-tuned with the augmentations",
        "| test split | pairs |",
        1,
        "test_shipped_model.py::test_the_cards_give_the_scores_before_and_after_each_fine_tune",
    ),
    *(
        (card, "## Taught the formality tag", header, 1, test)
        for card, first in ((BROAD_CARD, "| test set | pairs |"), (HELP_CARD, "| test split | pairs |"))
        for header, test in (
            (first, "test_shipped_model.py::test_the_cards_give_the_scores_before_and_after_each_fine_tune"),
            ("| asked |", "test_the_en_de_formality_tables_are_the_context_studys_json"),
        )
    ),
    (HELP_CARD, "## Scores", "| BLEU | chrF |", 1, "test_the_cards_scores_are_their_scores_json"),
    *(
        (f"models/transformer-mt-{pair}/README.md", section, header, 1, LANGUAGE_CARD_TEST)
        for pair in ("de-en", "en-fr", "fr-en", "en-es", "es-en")
        for section, header in (("## Scores", "| test set | pairs |"), ("## Data", "| origin | training pairs |"))
    ),
    (
        "models/transformer-mt-en-fr/README.md",
        "## Before and after the fine-tune",
        "| test set | BLEU before |",
        1,
        LANGUAGE_CARD_TEST,
    ),
]
# (page, header row): tables without a measured figure
REFERENCE = [
    ("README.md", "| page | what it holds |"),
    ("docs/bridges-and-hub.md", "| source `kind` | where | fetched with |"),
    ("docs/configuration.md", "| field | default | meaning |"),
    ("docs/configuration.md", "| type | what it does | length limit | CTranslate2 export |"),
    ("docs/development.md", "| folder (installed as) | what lives there | may import |"),
    ("docs/development.md", "| step | before the engine | after it |"),
    ("docs/development.md", "| floor | modules | what lives there |"),
    ("docs/scaling.md", "| config | what it runs | edit |"),
    ("docs/serving.md", "| application | where |"),
    ("docs/serving.md", "| filter | refuses | threshold |"),
    ("docs/serving.md", "| option | default | over it |"),
    ("docs/translation.md", "| extension | format | read with | what is translated |"),
    ("docs/translation.md", "| field | read from | en | de | fr | es | neutral |"),
]


def checker_exists(checker: str) -> bool:
    if "::" not in checker:
        return callable(globals().get(checker))
    module, name = checker.split("::")
    tree = ast.parse((REPO / "tests" / module).read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == name for node in tree.body)


def test_every_table_is_built_from_its_json_or_listed_as_reference():
    found = [table for page in PAGES for table in tables(page)]
    assert len(found) >= 50  # the finder finds tables at all
    counted = {entry: 0 for entry in FIGURES}
    for table in found:
        if (table.page, table.header) in REFERENCE:
            continue
        entries = [
            entry
            for entry in FIGURES
            if entry[:2] == (table.page, table.heading) and table.header.startswith(entry[2])
        ]
        assert entries, (
            f"{table.page}, under {table.heading!r}: the table {table.header!r} is in neither list of "
            "tests/test_docs_tables.py. If it holds measured figures, write them to a JSON in "
            "docs/results/ (the command's --json or --output), add a test that builds its rows from it "
            "and list the table in FIGURES; if it holds none (flags, formats, defaults), list its "
            "header row in REFERENCE."
        )
        counted[entries[0]] += 1
    for entry, count in counted.items():
        assert count == entry[3], f"{entry[:3]}: {count} tables found, {entry[3]} listed"
        assert checker_exists(entry[4]), f"{entry[:3]}: no test {entry[4]}"
    for page, header in REFERENCE:
        assert any(table.header == header for table in tables(page)), f"{page}: no table {header!r} any more"


def table_rows(page: str, heading: str, header: str) -> list[str]:
    """The rows of the one table of a page under this heading whose header row starts so."""
    [table] = [table for table in tables(page) if table.heading == heading and table.header.startswith(header)]
    return table.rows


def test_the_models_table_is_their_scores():
    """The README's two English-German models, before and after their formality fine-tune: BLEU on the repository's
    test split, the corpus's per origin and the UI messages', from docs/results/en_de_formality (the test split's:
    the model's scores.json) and, before, broad_ui and help_ui."""
    rows = table_rows("README.md", "## Quick start", "| model | knows |")
    for model, short, earlier, label in (
        ("transformer-mt-en-de-broad", "broad", "broad_ui", "`models/transformer-mt-en-de-broad`"),
        ("transformer-mt-en-de", "help", "help_ui", "`models/transformer-mt-en-de`"),
    ):
        after = {
            "data-en-de": json.loads((MODELS / model / "scores.json").read_text(encoding="utf-8")),
            **{name: read(f"en_de_formality/{short}-{name}.json") for name in ("shared-en-de", "en-de-ui")},
        }
        before = {name: read(f"{earlier}/new-{name}.json") for name in ("data-en-de", "shared-en-de", "en-de-ui")}
        for found, start in ((after, label), (before, "the same before its formality fine-tune")):
            shared = found["shared-en-de"]
            origins = [
                shared["scores"],
                *(shared["by_origin"][origin]["scores"] for origin in ("lohelp", "gnomehelp", "ddtp", "ding")),
            ]
            cells = (
                f"| {found['data-en-de']['scores']['bleu']['score']:.1f} | "
                + " / ".join(f"{scores['bleu']['score']:.1f}" for scores in origins)
                + f" | {found['en-de-ui']['scores']['bleu']['score']:.1f} |"
            )
            assert any(row.startswith(f"| {start}") and row.endswith(cells) for row in rows), (start, cells)


def formality_rows(study: dict, asked: tuple[str, ...] = ("more", "less", "default")) -> list[str]:
    """An en→de card's formality table: per register asked, the outputs in each register (formal / informal) of the
    test sentences whose reference addresses the reader, on the UI messages and on the help text (generate())."""
    found = study["engines"]["generate"]["formality"]
    return [
        f"| `{register}` | "
        + " | ".join(f"{found[name][register]['formal']} / {found[name][register]['informal']}" for name in found)
        + " |"
        for register in asked
    ]


def test_the_en_de_formality_tables_are_the_context_studys_json():
    """Each en→de card's formality table: the fine-tuned model asked each register, then the model before it (no
    tag) at its default, from docs/results/context's studies of the two."""
    for card, model in ((HELP_CARD, "transformer-mt-en-de"), (BROAD_CARD, "transformer-mt-en-de-broad")):
        before = formality_rows(read(f"context/{model}-before.json"), ("default",))[0]
        expected = [*formality_rows(read(f"context/{model}.json")), before.replace("`default`", "before, no tag", 1)]
        assert table_rows(card, "## Taught the formality tag", "| asked |") == expected, card


def test_the_cards_scores_are_their_scores_json():
    for card, model in ((HELP_CARD, "transformer-mt-en-de"), (BROAD_CARD, "transformer-mt-en-de-broad")):
        scores = json.loads((MODELS / model / "scores.json").read_text(encoding="utf-8"))["scores"]
        cells = [f"{scores[metric]['score']:.2f}" for metric in ("bleu", "chrf", "chrf++", "ter")]
        assert table_rows(card, "## Scores", "| BLEU | chrF |") == [f"| {' | '.join(cells)} |"], card


def test_the_main_job_tables_are_the_shipped_runs():
    """Every folder docs/results/main_job*/ is a main-job table in docs/results.md: recipes.results_table of the
    summaries its runs wrote, holding at least the seeds the page has shown (no run dropped from the evidence)."""
    from transformer_mt.recipes import results_table

    # release 0.2.0's recipe, 0.3.0's, joined pairs (scored on 2 joined test pairs too), then issue 26's before and
    # after on one machine, its data hygiene alone before and after, and span tokens before and after
    seeds_shown = {
        "main_job": 3,
        "main_job_0.3": 1,
        "main_job_0.4": 3,
        "main_job_46e8375": 3,
        "main_job_a24ab84": 3,
        "main_job_a24ab84_rerun": 1,
        "main_job_a419c0e": 3,
        "main_job_c862457": 1,
        "main_job_c862457_fixed": 3,
        "main_job_7020b8b": 3,
        "main_job_ff61d0e": 3,
        "main_job_ff61d0e_rerun": 1,
    }
    folders = sorted(path for path in RESULTS.glob("main_job*") if path.is_dir())
    assert [folder.name for folder in folders] == sorted(seeds_shown)
    for folder in folders:
        summaries = [json.loads(path.read_text(encoding="utf-8")) for path in folder.glob("*.json")]
        assert len(summaries) >= seeds_shown[folder.name]
        assert results_table(summaries) in PAGES["docs/results.md"]


def test_the_seed_0_examples_are_its_summarys():
    examples = read("main_job/sinusoidal-seed0.json")["examples"]
    assert table_rows("docs/results.md", "## The main job", "| source | translation (seed 0) |") == [
        f"| {source} | {translation} |" for source, translation in examples.items()
    ]


def test_the_span_tokens_same_step_table_is_its_json():
    """docs/results.md's span-token comparison at the same step: each seed's paired BLEU and chrF as scored."""
    for seed, step in ((0, "2,500"), (1, "2,000 / 1,998"), (2, "2,500")):
        paired = read(f"span_tokens_same_step/seed{seed}.json")["metrics"]
        cells = []
        for metric in ("bleu", "chrf"):
            before, after = paired[metric]["systems"].values()
            cells.append(f"{before['score']:.2f} -> {after['score']:.2f} ({after['p_value']:.2g})")
        assert f"| {seed} | {step} | {' | '.join(cells)} |" in PAGES["docs/results.md"], seed


def test_the_pivot_table_is_its_json():
    """docs/languages.md's pairs through English: each measured direction of each pivot study, as its JSON says."""
    rows = []
    for path in sorted((RESULTS / "languages").glob("pivot-*.json")):
        study = json.loads(path.read_text(encoding="utf-8"))
        for name, found in study["directions"].items():
            if not found["measured"]:
                continue
            source, target = name.split("-")
            pivot, direct, first = found["pivot"], found["from_english"], found["first_hop"]
            cells = [
                f"{source}→en→{target}",
                f"{study['data']['messages']:,}",
                *(f"{value:.1f}" for value in (pivot["bleu"], pivot["chrf"], direct["bleu"], first["bleu"])),
                f"{pivot['sentences_per_second']:.0f}",
                f"{direct['sentences_per_second']:.0f}",
                f"{found['time_ratio']:.2f}x",
            ]
            rows.append(f"| {' | '.join(cells)} |")
    assert rows and table_rows("docs/languages.md", "## Pairs through English", "| pair | messages |") == rows


def test_the_ema_table_is_its_json():
    """Test BLEU (validation BLEU) of each seed without EMA and with each decay; a run without a JSON is "not run"."""
    rows = []
    for seed in (0, 1, 2):
        cells = []
        for name in ("base", "ema995", "ema999"):
            path = RESULTS / "ema" / f"{name}-seed{seed}.json"
            run = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
            cells.append(f"{run['test_bleu']:.2f} ({run['validation_bleu']:.2f})" if run else "not run")
        rows.append(f"| {seed} | {' | '.join(cells)} |")
    assert table_rows("docs/results.md", "## A moving average of the weights", "| seed | without EMA |") == rows


def test_the_benchmark_tables_are_their_json():
    """docs/results.md's speed of each position type and of each batching: best tokens/s and the ratios to the
    first, as docs/results/benchmarks/ holds them."""
    positions = read("benchmarks/positions-main-job.json")
    rows = []
    for task, label in (("generation", "generate() greedy, tokens/s"), ("training", "training, target tokens/s")):
        speeds = positions[task]
        base = speeds["sinusoidal"]["best"]
        cells = [f"{base:,.0f}"] + [
            f"{speeds[kind]['best']:,.0f} ({speeds[kind]['best'] / base:.2f}x)"
            for kind in ("learned", "alibi", "rotary")
        ]
        rows.append(f"| {label} | {' | '.join(cells)} |")
    assert table_rows("docs/results.md", "### Position types", "| | sinusoidal |") == rows
    batching = read("benchmarks/batching-main-job.json")["batching"]
    base = batching["48 pairs, length-grouped"]
    rows = [f"| 48 pairs, length-grouped | {base['best']:,.0f} | 1.0 |"]
    for tokens in (2048, 4096):
        run = batching[f"<= {tokens} padded tokens"]
        rows.append(
            f"| at most {tokens:,} padded tokens | {run['best']:,.0f} | {run['best'] / base['best']:.2f}x / "
            f"{run['median'] / base['median']:.2f}x |"
        )
    assert table_rows("docs/results.md", "### Token batches", "| batches |") == rows


MARKUP_KINDS = ("a", "em", "kbd", "span.app", "span.gui", "span.menuitem", "sub")


def test_the_markup_tables_are_the_studys_json():
    """The markup study's per-kind table is docs/results/markup/dev.json; each row of the table of its steps is the
    study's JSON at that commit (dev.json, or markup/steps/COMMIT.json), and no step is shown without one."""
    page = PAGES["docs/results.md"]
    markup = read("markup/dev.json")
    for kind, ours in markup["sentence"]["placement"].items():
        cells = [
            ours["tags"],
            f"{ours['chrf']:.1f}",
            f"{markup['per_node']['placement'][kind]['chrf']:.1f}",
            f"{markup['strawman']['placement'][kind]['chrf']:.1f}",
        ]
        assert any(
            line.startswith(f"| `{kind}`") and line.endswith(" | ".join(map(str, cells)) + " |")
            for line in page.splitlines()
        ), kind
    assert markup["sentence"]["tags_kept"] == markup["sentence"]["well_formed"] == markup["rows"] == 300
    steps = [read(f"markup/steps/{path.name}") for path in sorted((RESULTS / "markup" / "steps").glob("*.json"))]
    studies = {study["commit"][:7]: study for study in [*steps, markup]}
    rows = table_rows("docs/results.md", "### Inline markup through whole sentences", "| commit | change |")
    assert sorted(row.split(" | ")[0][2:] for row in rows) == sorted(studies)
    for row in rows:
        study = studies[row.split(" | ")[0][2:]]
        cells = " | ".join(f"{study['sentence']['placement'][kind]['chrf']:.1f}" for kind in MARKUP_KINDS)
        assert row.endswith(f" | {cells} |"), row


def test_the_span_tables_are_their_json():
    """Each spans study's rows: messages, spans, the shares carried, put back and lost, BLEU without and with the
    repair (paired p), per test split of ../shared/data; the two engines' JSONs at 006fc0f and 5b48691 alike."""
    for name, heading in (
        ("spans/test.json", "### Protected spans"),
        ("spans/test_transformers.json", "### Protected spans"),
        ("broad_ui/spans_test.json", "### The broader model fine-tuned on UI messages"),
    ):
        rows = table_rows("docs/results.md", heading, "| test split | messages |")
        for study in read(name)["studies"]:
            counts = study["spans"]["all"]
            lost = f"{counts['lost_share']:.1%} ({counts['lost']})" if counts["lost"] else "0"
            bleu = (
                f"{study['without_repair']['bleu']:.2f} / {study['with_repair']['bleu']:.2f} "
                f"(p = {study['paired_bootstrap']['bleu']['p_value']:.2g})"
            )
            row = (
                f"| {study['data'].split('/')[-1]} | {study['messages']} | {counts['spans']} | "
                f"{counts['carried_share']:.1%} | {counts['repaired_share']:.1%} | {lost} | {bleu} |"
            )
            assert row in rows, (name, row)


def test_the_capitals_tables_are_their_json():
    """Each casing study's table: case-insensitive BLEU of each kind of input as a share of the normal inputs', on
    the test splits of ../shared/data/en-de and ../shared/data/en-de-ui."""
    labels = {
        "normal, folded": "normal, folded",
        "upper": "upper, as they are",
        "upper, folded": "upper, folded",
        "title": "title, as they are",
        "title, folded": "title, folded",
    }
    for name, heading in (
        ("casing/test.json", "### Capitals"),
        ("broad_ui/casing_test.json", "### The broader model fine-tuned on UI messages"),
        ("help_ui/casing_test.json", "### The help-text model fine-tuned with the augmentations"),
    ):
        studies = {study["data"]: study for study in read(name)["studies"]}
        assert sorted(studies) == ["../shared/data/en-de", "../shared/data/en-de-ui"]
        rows = [
            f"| {label} | "
            + " | ".join(f"{studies[data]['runs'][run]['share_of_normal']:.1%}" for data in sorted(studies))
            + " |"
            for run, label in labels.items()
        ]
        assert table_rows("docs/results.md", heading, "| inputs |") == rows, name


def test_the_screen_tables_are_their_json():
    """The two screens of training-time augmentations: each run's validation scores (and, for the span tokens'
    screen, its minutes)."""
    screens = {"augmentation_search": "", "spans_search": "minutes"}
    found = [
        table.rows
        for table in tables("docs/results.md")
        if table.heading == "### Training-time augmentations, screened"
    ]
    for (folder, extra), rows in zip(screens.items(), found):
        for path in sorted((RESULTS / folder).glob("*.json")):
            run = json.loads(path.read_text(encoding="utf-8"))
            cells = [
                run["validation"]["bleu"],
                run["validation"]["chrf"],
                run["validation_cased"]["upper"]["bleu"],
                run["validation_cased"]["title"]["bleu"],
                run["validation_joined"]["2"]["bleu"],
            ]
            cells += [run["train_minutes"]] if extra else []
            row = (
                f"| {run['candidate']} | {run['seed']} | "
                + " | ".join(f"{cell:.2f}" for cell in cells[:5])
                + "".join(f" | {cell:.1f}" for cell in cells[5:])
                + " |"
            )
            assert row in rows, (folder, row)
        assert len(rows) == len(list((RESULTS / folder).glob("*.json")))


def test_the_suggestion_filter_table_is_its_json():
    results = read("suggestions/filter.json")
    rows = []
    for split in ("validation", "test"):
        found = results[split]
        refused = [tuple(map(int, found["refused"][kind].split("/"))) for kind in found["refused"]]
        garbage = sum(number for number, _ in refused)
        assert sum(total for _, total in refused) == found["garbage"]
        rows.append(
            f"| {split} | {round(found['recall'] * found['corrections'])}/{found['corrections']} "
            f"({found['recall']:.3f}) | {found['precision']:.3f} | {garbage}/{found['garbage']} "
            f"({garbage / found['garbage']:.1%}) | " + " | ".join(found["refused"].values()) + " |"
        )
    assert table_rows("docs/serving.md", "## Suggestions", "| split |") == rows


def cells_of(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def test_the_promotion_table_is_its_json():
    """The two promotion runs against the shipped model: BLEU / chrF and paired p on each set, the decision then, and
    what today's rule decides by each metric from the same p-values."""
    from transformer_mt.serving.promotion import PromotionSettings, decide

    rows = table_rows("docs/serving.md", "## Suggestions that teach the model", "| set | shipped model |")
    for number, name in ((1, "help_text_ui_suggestions.json"), (2, "help_text_ui_suggestions_more_replay.json")):
        run = read(f"promotion/{name}")
        promotion, ui = run["promotion"], run["domain_slice"]
        sets = [
            (
                ui["bleu"]["before"],
                ui["chrf"]["before"],
                ui["bleu"]["after"],
                ui["chrf"]["after"],
                ui["bleu"]["p_value"],
                ui["chrf"]["p_value"],
            )
        ]
        for held_out in (promotion["suggestions"], promotion["original"]):
            sets.append(
                (
                    held_out["bleu"]["current"],
                    held_out["chrf"]["current"],
                    held_out["bleu"]["candidate"],
                    held_out["chrf"]["candidate"],
                    held_out["bleu"]["p_value"],
                    held_out["chrf"]["p_value"],
                )
            )
        for row, (bleu, chrf, new_bleu, new_chrf, p_bleu, p_chrf) in zip(rows, sets):
            cells = cells_of(row)
            assert cells[1] == f"{bleu:.2f} / {chrf:.2f}", row
            assert cells[1 + number] == f"{new_bleu:.2f} / {new_chrf:.2f} (p {p_bleu:.2g} / {p_chrf:.2g})", row
        decision = cells_of(rows[3])[1 + number]
        assert decision.startswith("**promoted**" if promotion["promoted"] else "**not promoted**"), decision
        for row, metric in zip(rows[4:], ("chrf", "bleu")):  # the rule of today, on the recorded p-values
            promoted, _ = decide(promotion["original"], promotion["suggestions"], PromotionSettings(metric=metric))
            decision = cells_of(row)[1 + number]
            assert decision.startswith("**promoted**" if promoted else "**not promoted**"), decision
            p_values = [promotion[held_out][metric]["p_value"] for held_out in ("original", "suggestions")]
            assert any(f"(p {p_value:.2g})" in decision for p_value in p_values), decision
        assert len(rows) == 6, rows


def test_the_load_tables_are_their_json():
    """The load test's table is what scripts/load_test.py reports of its JSON; the shared-Redis table the
    latencies of docs/results/benchmarks/shared-load.json."""
    from transformer_mt.experiments.benchmarks.serving import load_report

    report = load_report(read("benchmarks/load-test.json")).splitlines()
    reported = [line for line in report if re.match(r"\| \d+ clients \|", line)]
    assert [row.split(" | ")[1:] for row in table_rows("docs/serving.md", "## Batching and load", "| load |")] == [
        row.split(" | ")[1:] for row in reported
    ]
    shared = read("benchmarks/shared-load.json")

    def latencies(run: dict) -> str:
        return " | ".join(
            f"{run['latency'][kind]['p50_ms']:.0f} / {run['latency'][kind]['p95_ms']:.0f}"
            for kind in ("all", "first", "repeat")
        )

    assert table_rows("docs/serving.md", "## Several processes", "| server |") == [
        f"| 2 workers, `--redis` | {shared['shared']['requests']} | {latencies(shared['shared'])} |",
        f"| 1 process | {shared['alone']['requests']} | {latencies(shared['alone'])} |",
    ]


ENGINES = {  # docs/translation.md's label of each configuration of benchmark_engines.py, and the README's
    "transformers (default)": (
        "generate(), 2 torch threads (`--engine transformers`)",
        "generate(), eager, 2 threads",
    ),
    "transformers, 1 thread": ("generate(), 1 torch thread", None),
    "transformers compiled": (
        "generate() compiled (`compile_generation`), 2 threads",
        "generate(), compiled, 2 threads",
    ),
    "auto (default)": (
        "CTranslate2 float32, 1 thread x 2 workers (the default)",
        "CTranslate2 float32, 1 thread x 2 workers",
    ),
    "ctranslate2 float32, 2 threads x 1": ("CTranslate2 float32, 2 threads x 1 worker", None),
    "ctranslate2 int8": (
        "CTranslate2 int8, 1 thread x 2 workers (`--quantization int8`)",
        "CTranslate2 int8, 1 thread x 2 workers",
    ),
}


def test_the_engine_tables_are_their_json():
    results = read("benchmarks/engines.json")
    full, short = [], []
    for name, (label, readme_label) in ENGINES.items():
        run = results["configurations"][name]
        speed = run["sentences_per_second"]
        full.append(
            f"| {label} | {speed['best']:.0f} / {speed['median']:.0f} | {run['bleu']:.2f} | "
            f"{run['chrf']:.2f} | {run['lines equal to generate()']}/{results['lines']} |"
        )
        if readme_label:
            short.append(f"| {readme_label} | {speed['best']:.0f} | {run['bleu']:.2f} |")
    assert sorted(
        table_rows("docs/translation.md", "## Engines: generate() and CTranslate2", "| engine, threads |")
    ) == sorted(full)
    assert sorted(table_rows("README.md", "## Results", "| engine | sentences/s | BLEU |")) == sorted(short)


def trust_rows(results: dict) -> list[str]:
    """docs/translation.md's trust table, one row per shipped model and test split, from the trust study's JSON."""
    rows = []
    for model, found in results["models"].items():
        for split in ("en-de", "en-de-ui"):
            study, guards = found[split], found[split]["guards"]
            confidence, paired = study["confidence"], guards["paired"]["metrics"]
            precision = " / ".join(f"{confidence['precision'][k]:.3f}" for k in ("20%", "50%", "80%", "100%"))
            rates = [
                " -> ".join(f"{guards[when][f'{kind}_rate']:.2%}" for when in ("before", "after"))
                + f" ({guards['references'][f'{kind}_rate']:.2%})"
                for kind in ("loop", "copy")
            ]
            scores = [
                f"{paired[metric]['systems']['without guards']['score']:.2f} -> "
                f"{paired[metric]['systems']['with guards']['score']:.2f} "
                f"(p {paired[metric]['systems']['with guards']['p_value']:.2f})"
                for metric in ("bleu", "chrf")
            ]
            rows.append(
                f"| {model} | {split} test ({study['pairs']}) | {confidence['spearman']:.3f} "
                f"({confidence['spearman_raw_score']:.3f}) | {precision} | {' | '.join(rates)} | "
                f"{' | '.join(scores)} |"
            )
    return rows


def test_the_trust_table_is_its_json():
    results = read("trust/trust.json")
    page = PAGES["docs/translation.md"]
    for row in trust_rows(results):
        assert row in page, row
    for model, found in results["models"].items():
        assert f"{found['identical']['false_alarm_rate']:.1%} ({model} model)" in page


def test_the_term_test_table_is_its_json():
    """docs/translation.md's term test: each shipped model's terms used by each step and in all, and the glossary's
    paired BLEU and chrF, as their JSONs hold them."""
    page = PAGES["docs/translation.md"]
    for model, folder in (("broader", "broad_ui"), ("help-text", "help_ui")):
        results = read(f"{folder}/terms_forced.json")
        for split, label in (("en-de", "en-de (`data/en-de`)"), ("en-de-ui", "en-de-ui")):
            found = results["splits"][split]
            systems = {metric: found["paired"]["metrics"][metric]["systems"] for metric in ("bleu", "chrf")}
            cells = [
                f"{systems[metric]['without glossary']['score']:.2f} -> "
                f"{systems[metric]['with glossary']['score']:.2f} "
                f"({systems[metric]['with glossary']['p_value']:.2g})"
                for metric in ("bleu", "chrf")
            ]
            steps = " | ".join(
                str(found["used_by_step"][step]) for step in ("annotation", "another beam", "placed", "forced")
            )
            assert sum(found["used_by_step"].values()) == found["used_with"]
            row = (
                f"| {model} | {label} | {found['term_pairs']} | {found['terms_required']} | {steps} | "
                f"{found['use_rate_with']:.1%} | {' | '.join(cells)} |"
            )
            assert row in page, row
