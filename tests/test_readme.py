"""The README and every docs page run as written: every Python example and the outputs it shows, every
`python scripts/...` command's options, the translate commands, every link, and the main-job table; the README
stays a front page."""

import ast
import importlib
import io
import re
import shlex

import pytest

from transformer_mt.documents.files import file_format

from .utils import DATA, REPO, save_tiny


MAX_README_LINES = 250  # a front page (what, install, quick start, results, the index); the rest is in docs/*.md
PAGES = {path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
         for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}
README = PAGES["README.md"]


def fenced(language: str) -> list[tuple[str, str]]:
    """(page, code) of every fenced block in this language: the README's first, then each docs page's."""
    return [(page, block) for page, text in PAGES.items()
            for block in re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)]


PYTHON_BLOCKS = fenced("python")
COMMANDS = list(dict.fromkeys(  # each command line once, in page order
    line for _, block in fenced("bash") for line in block.replace("\\\n", " ").splitlines()
    if "scripts/" in line and not line.startswith("#")))


@pytest.fixture
def readme_dir(tmp_path, monkeypatch):
    """A working directory holding what the examples refer to: data/en-de, the shipped model and
    runs/main-sinusoidal."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "en-de").symlink_to(DATA)
    (tmp_path / "models").symlink_to(REPO / "models")
    save_tiny(tmp_path / "runs" / "main-sinusoidal")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def shown_outputs(block: str) -> list[tuple[str, object]]:
    """(expression, value) for every expression line followed by a comment line holding a Python literal: the
    output the example shows."""
    lines = block.splitlines()
    shown = []
    for line, comment in zip(lines, lines[1:]):
        if not comment.startswith("# "):
            continue
        try:
            ast.parse(line, mode="eval")
            value = ast.literal_eval(comment[2:])
        except (SyntaxError, ValueError):
            continue
        shown.append((line, value))
    return shown


@pytest.mark.slow
def test_every_python_example_runs(readme_dir):
    assert len(PYTHON_BLOCKS) >= 6
    assert PYTHON_BLOCKS[0][0] == "README.md" and shown_outputs(PYTHON_BLOCKS[0][1])  # the quick start shows one
    for number, (page, block) in enumerate(PYTHON_BLOCKS):
        namespace = {}
        exec(compile(block, f"{page} python block {number}", "exec"), namespace)
        for expression, value in shown_outputs(block):  # the quick start: the shipped model, sentence by sentence
            assert eval(expression, namespace) == value, f"{page}: {expression}"
        if "loss" in namespace:
            assert namespace["loss"].ndim == 0, page
    assert (readme_dir / "my-model" / "model.safetensors").exists()  # a model of your own
    assert (readme_dir / "runs" / "from-python" / "model.safetensors").exists()  # training from Python


def script_command(line: str) -> tuple[str, list[str]]:
    """(script name, arguments) of a command line; `[...]` marks optional arguments, `...` elided ones."""
    script, arguments = re.search(r"scripts/(\w+)\.py(.*)", line).groups()
    arguments = arguments.split("|")[0].replace("[", " ").replace("]", " ")
    return script, [a for a in shlex.split(arguments.split("#")[0]) if a != "..."]


def test_every_command_uses_existing_scripts_and_options(capsys):
    assert len(COMMANDS) >= 30
    helps = {}
    for line in COMMANDS:
        script, arguments = script_command(line)
        assert (REPO / "scripts" / f"{script}.py").is_file(), line
        if script not in helps:
            with pytest.raises(SystemExit) as exit_info:
                importlib.import_module(f"transformer_mt.scripts.{script}").main(["--help"])
            assert exit_info.value.code == 0
            helps[script] = capsys.readouterr().out
        for option in (a.split("=")[0] for a in arguments if a.startswith("--")):
            assert re.search(rf"{re.escape(option)}\b", helps[script]), f"{option} of {line!r} is not an option"


# A file of each structured format with one text, "Click the Save button.", for the documented commands
STRUCTURED = {
    "po": 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\nmsgid "Click the Save button."\n'
          'msgstr ""\n',
    "xliff": '<?xml version="1.0" encoding="UTF-8"?>\n<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:'
             '1.2"><file source-language="en" target-language="de" datatype="plaintext" original="x"><body>'
             '<trans-unit id="1"><source>Click the Save button.</source></trans-unit></body></file></xliff>\n',
    "html": "<p>Click the Save button.</p>\n",
    "markdown": "# Saving\n\nClick the **Save** button.\n",
}


def test_translate_commands_run_as_written(readme_dir, capsys, monkeypatch):
    translate = importlib.import_module("transformer_mt.scripts.translate")
    lines = [line for line in COMMANDS if "scripts/translate.py" in line]
    assert len(lines) >= 5
    for line in lines:
        _, arguments = script_command(line)
        if line.startswith("echo") or "--interactive" in arguments:
            text = shlex.split(line)[1] if line.startswith("echo") else "Click the Save button."
            stdin = io.TextIOWrapper(io.BytesIO((text + "\n").encode("utf-8")), encoding="utf-8")
            monkeypatch.setattr("sys.stdin", stdin)
        if "--input" in arguments and file_format(arguments[arguments.index("--input") + 1]):  # .po, XLIFF, HTML, .md
            source = readme_dir / arguments[arguments.index("--input") + 1]
            source.write_text(STRUCTURED[file_format(str(source))], encoding="utf-8")
            output = readme_dir / arguments[arguments.index("--output") + 1]
            output.unlink(missing_ok=True)
            translate.main(arguments)
            assert output.read_text(encoding="utf-8") != source.read_text(encoding="utf-8"), line  # translated
            continue
        if "--input" in arguments:  # a file in, a file out (run in this process, whatever the launcher)
            source = readme_dir / arguments[arguments.index("--input") + 1]
            source.write_text("Click the Save button.\n\nDeletes the selected rows.\n", encoding="utf-8")
            if "--target_prefix" in arguments:  # one prefix a line (empty: none)
                prefixes = readme_dir / arguments[arguments.index("--target_prefix") + 1]
                prefixes.write_text("Klicken\n\n\n", encoding="utf-8")
            output = readme_dir / arguments[arguments.index("--output") + 1]
            output.unlink(missing_ok=True)
            translate.main(arguments)
            assert output.read_text(encoding="utf-8").count("\n") == 3, line
            continue
        translate.main(arguments)
        texts = [a for a in arguments if " " in a] or ["(stdin)"]  # one output line a text, however many sentences
        per_text = int(arguments[arguments.index("--num_return_sequences") + 1]) \
            if "--num_return_sequences" in arguments else 1  # n-best: that many TSV rows a text
        assert len(capsys.readouterr().out.splitlines()) == len(texts) * per_text, line


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # a comment in a code block is no heading
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.*)$", prose, flags=re.M)}


def test_every_link_and_named_path_leads_somewhere():
    for page, text in PAGES.items():
        folder = (REPO / page).parent
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://")):
                continue
            path, _, anchor = target.partition("#")
            linked = (folder / path).resolve() if path else REPO / page
            assert linked.exists(), f"{page}: {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in anchors(linked.read_text(encoding="utf-8")), f"{page}: {target}"
        for path in re.findall(r"`(docs/[^`\s*]*)`", text):  # result files and folders the pages name
            assert (REPO / path).exists(), f"{page}: {path}"


def test_the_readme_is_a_front_page_with_an_index_of_the_docs():
    assert len(README.splitlines()) <= MAX_README_LINES
    assert len(PAGES) >= 6
    for page in PAGES:
        if page != "README.md":
            assert f"]({page})" in README, f"{page} is not in the README's index"


def test_the_main_job_table_is_the_shipped_runs():
    """Every folder docs/results/main_job*/ is a main-job table in docs/results.md: recipes.results_table of the
    summaries its runs wrote, holding at least the seeds the page has shown (no run dropped from the evidence)."""
    import json

    from transformer_mt.recipes import results_table

    # release 0.2.0's recipe, 0.3.0's, joined pairs (scored on 2 joined test pairs too), then issue 26's before and
    # after on one machine, its data hygiene alone before and after, and span tokens before and after
    seeds_shown = {"main_job": 3, "main_job_0.3": 1, "main_job_0.4": 3, "main_job_46e8375": 3, "main_job_a24ab84": 3,
                   "main_job_a24ab84_rerun": 1, "main_job_a419c0e": 3, "main_job_c862457": 1,
                   "main_job_c862457_fixed": 3, "main_job_7020b8b": 3, "main_job_ff61d0e": 3,
                   "main_job_ff61d0e_rerun": 1}
    folders = sorted(path for path in (REPO / "docs" / "results").glob("main_job*") if path.is_dir())
    assert [folder.name for folder in folders] == sorted(seeds_shown)
    for folder in folders:
        summaries = [json.loads(path.read_text(encoding="utf-8")) for path in folder.glob("*.json")]
        assert len(summaries) >= seeds_shown[folder.name]
        assert results_table(summaries) in PAGES["docs/results.md"]


def test_the_span_tokens_same_step_table_is_its_json():
    """docs/results.md's span-token comparison at the same step: each seed's paired BLEU and chrF as scored."""
    import json

    for seed, step in ((0, "2,500"), (1, "2,000 / 1,998"), (2, "2,500")):
        paired = json.loads((REPO / "docs" / "results" / "span_tokens_same_step" / f"seed{seed}.json").read_text(
            encoding="utf-8"))["metrics"]
        cells = []
        for metric in ("bleu", "chrf"):
            before, after = paired[metric]["systems"].values()
            cells.append(f"{before['score']:.2f} -> {after['score']:.2f} ({after['p_value']:.2g})")
        assert f"| {seed} | {step} | {' | '.join(cells)} |" in PAGES["docs/results.md"], seed


def test_the_real_text_tables_are_the_studies_json():
    """docs/results.md's markup, spans and capitals tables hold the figures of the studies' JSON."""
    import json

    results = REPO / "docs" / "results"
    page = PAGES["docs/results.md"]
    markup = json.loads((results / "markup" / "dev.json").read_text(encoding="utf-8"))
    for kind, ours in markup["sentence"]["placement"].items():
        cells = [ours["tags"], f"{ours['chrf']:.1f}", f"{markup['per_node']['placement'][kind]['chrf']:.1f}",
                 f"{markup['strawman']['placement'][kind]['chrf']:.1f}"]
        assert any(line.startswith(f"| `{kind}`") and line.endswith(" | ".join(map(str, cells)) + " |")
                   for line in page.splitlines()), kind
    assert markup["sentence"]["tags_kept"] == markup["sentence"]["well_formed"] == markup["rows"] == 300
    for name in ("spans/test.json", "spans/test_transformers.json", "broad_ui/spans_test.json"):
        spans = json.loads((results / name).read_text(encoding="utf-8"))
        for study in spans["studies"]:
            counts = study["spans"]["all"]
            assert (f"| {counts['spans']} | {counts['carried_share']:.1%} | {counts['repaired_share']:.1%} |"
                    in page), (name, study["data"])
    for name in ("casing/test.json", "broad_ui/casing_test.json"):  # before and after the UI fine-tune
        casing = json.loads((results / name).read_text(encoding="utf-8"))
        shares = {(study["data"], run): study["runs"][run]["share_of_normal"] for study in casing["studies"]
                  for run in ("upper, folded", "title, folded")}
        for run in ("upper, folded", "title, folded"):
            cells = [f"{shares[(data, run)]:.1%}" for data in ("../shared/data/en-de", "../shared/data/en-de-ui")]
            assert f"| {run} | {cells[0]} | {cells[1]} |" in page, (name, run)


def test_the_augmentation_screen_table_is_its_json():
    import json

    page = PAGES["docs/results.md"]
    for path in sorted((REPO / "docs" / "results" / "augmentation_search").glob("*.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        cells = [run["validation"]["bleu"], run["validation"]["chrf"], run["validation_cased"]["upper"]["bleu"],
                 run["validation_cased"]["title"]["bleu"], run["validation_joined"]["2"]["bleu"]]
        assert f"| {run['candidate']} | {run['seed']} | " + " | ".join(f"{cell:.2f}" for cell in cells) + " |" in page


def trust_rows(results: dict) -> list[str]:
    """docs/translation.md's trust table, one row per shipped model and test split, from the trust study's JSON."""
    rows = []
    for model, found in results["models"].items():
        for split in ("en-de", "en-de-ui"):
            study, guards = found[split], found[split]["guards"]
            confidence, paired = study["confidence"], guards["paired"]["metrics"]
            precision = " / ".join(f"{confidence['precision'][k]:.3f}" for k in ("20%", "50%", "80%", "100%"))
            rates = [" -> ".join(f"{guards[when][f'{kind}_rate']:.2%}" for when in ("before", "after"))
                     + f" ({guards['references'][f'{kind}_rate']:.2%})" for kind in ("loop", "copy")]
            scores = [f"{paired[metric]['systems']['without guards']['score']:.2f} -> "
                      f"{paired[metric]['systems']['with guards']['score']:.2f} "
                      f"(p {paired[metric]['systems']['with guards']['p_value']:.2f})" for metric in ("bleu", "chrf")]
            rows.append(f"| {model} | {split} test ({study['pairs']}) | {confidence['spearman']:.3f} "
                        f"({confidence['spearman_raw_score']:.3f}) | {precision} | {' | '.join(rates)} | "
                        f"{' | '.join(scores)} |")
    return rows


def test_the_trust_table_is_its_json():
    import json

    results = json.loads((REPO / "docs" / "results" / "trust" / "trust.json").read_text(encoding="utf-8"))
    page = PAGES["docs/translation.md"]
    for row in trust_rows(results):
        assert row in page, row
    for model, found in results["models"].items():
        assert f"{found['identical']['false_alarm_rate']:.1%} ({model} model)" in page


def test_the_term_test_table_is_its_json():
    """docs/translation.md's term test: each shipped model's terms used by each step and in all, and the glossary's
    paired BLEU and chrF, as their JSONs hold them."""
    import json

    page = PAGES["docs/translation.md"]
    for model, folder in (("broader", "broad_ui"), ("help-text", "help_ui")):
        results = json.loads((REPO / "docs" / "results" / folder / "terms_forced.json").read_text(encoding="utf-8"))
        for split, label in (("en-de", "en-de (`data/en-de`)"), ("en-de-ui", "en-de-ui")):
            found = results["splits"][split]
            systems = {metric: found["paired"]["metrics"][metric]["systems"] for metric in ("bleu", "chrf")}
            cells = [f"{systems[metric]['without glossary']['score']:.2f} -> "
                     f"{systems[metric]['with glossary']['score']:.2f} "
                     f"({systems[metric]['with glossary']['p_value']:.2g})" for metric in ("bleu", "chrf")]
            steps = " | ".join(str(found["used_by_step"][step])
                               for step in ("annotation", "another beam", "placed", "forced"))
            assert sum(found["used_by_step"].values()) == found["used_with"]
            row = (f"| {model} | {label} | {found['term_pairs']} | {found['terms_required']} | {steps} | "
                   f"{found['use_rate_with']:.1%} | {' | '.join(cells)} |")
            assert row in page, row
