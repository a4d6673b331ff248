"""Translating through English (transformer_mt.steps.pivot, the server's PivotModel): a pivoted text is the second
hop's translation of the first hop's, alignments compose, glossary terms are carried by the first hop's alignment,
the confidence is the product and abstains on it, and the server offers, translates, stores suggestions for and
translates files of a pair no model has (fr→de html with a link, a placeholder and a glossary term, both engines;
the shipped models give fr→de and de→fr, both engines)."""

import math
from pathlib import Path

import pytest
from lxml import etree

from transformer_mt.commands.translate import parse_args as translate_args
from transformer_mt.engines import load_engine
from transformer_mt.experiments import pivot_study
from transformer_mt.options import TranslationOptions
from transformer_mt.quality import FEATURES, Calibration, Flags
from transformer_mt.scripts import translate as translate_script
from transformer_mt.steps import Pivot
from transformer_mt.steps.pivot import carried_terms, compose, joined_flags
from transformer_mt.translation import translate_texts

from .utils import require, save_copy_model


require("fastapi", "the server needs the [serve] extra: pip install -e '.[serve]'")
from fastapi.testclient import TestClient  # noqa: E402

from transformer_mt.serving import ServedModel, create_app  # noqa: E402
from transformer_mt.serving.suggestion_store import SuggestionStore  # noqa: E402
from transformer_mt.serving.suggestions import Suggestions  # noqa: E402
from transformer_mt.serving.uploads import FileStore  # noqa: E402

from .test_serving import FakeEngine  # noqa: E402
from .test_suggestions import ScoringEngine  # noqa: E402


REPO = Path(__file__).resolve().parent.parent
TEXTS = ["Open the file.", "Close the dialog window. Press Enter to confirm the entry."]
POST = '<p>Open the <a href="https://example.org/f?a=1&amp;b=2">file</a> %s.</p>'


@pytest.fixture(scope="module")
def hops(tmp_path_factory):
    """Copy-trained tiny models fr→en and en→de (each writes what it reads), saved once."""
    root = tmp_path_factory.mktemp("pivot")
    for source, target in (("fr", "en"), ("en", "de")):
        save_copy_model(
            root / f"{source}-{target}", dict(num_beams=2, early_stopping=True, max_length=40), (source, target)
        )
    return root


def engines(root, name="transformers"):
    return load_engine(str(root / "fr-en"), name), load_engine(str(root / "en-de"), name)


def test_a_pivoted_text_is_the_second_hop_s_translation_of_the_first_hop_s(hops):
    first, second = engines(hops)
    options = TranslationOptions(num_beams=2, num_return_sequences=2, scores=True, guards=False)
    pivoted = translate_texts(Pivot(first, second), TEXTS, options.replace(source_lang="fr", target_lang="de"))
    english = translate_texts(
        first, TEXTS, options.replace(num_return_sequences=1, source_lang="fr", target_lang="en")
    )
    direct = translate_texts(
        second, [text[0][0] for text in english], options.replace(source_lang="en", target_lang="de")
    )
    assert [[text for text, _ in hypotheses] for hypotheses in pivoted] == [
        [text for text, _ in hypotheses] for hypotheses in direct
    ]
    for hypotheses, head, tail in zip(pivoted, english, direct):  # log-probabilities add: the hops' product
        assert [score for _, score in hypotheses] == pytest.approx([head[0][1] + score for _, score in tail])
        assert hypotheses.flags.pivot and not tail.flags.pivot


def test_alignments_compose_and_terms_are_carried_by_the_first_hop_s_alignment():
    assert compose([(0, 1), (1, 0), (2, 2)], [(0, 0), (1, 2), (1, 3), (2, 1)]) == [(0, 2), (0, 3), (1, 0), (2, 1)]
    assert compose([(0, 0)], None) is None
    options = TranslationOptions(glossary=(("Fichier", "Datei"), ("Ouvrir", None), ("menu", "Menü")))
    sentences = ["Ouvrir le Fichier récent.", "Le menu"]
    english = ["Open the recent file.", "The"]
    carried = carried_terms(sentences, english, [[(0, 0), (1, 1), (2, 3), (3, 2)], []], options)
    assert carried == (("file", "Datei"),)  # punctuation left out; a term kept as written is not carried; no alignment


def test_the_confidence_is_the_product_of_the_hops_and_abstains_on_it(hops):
    first, second = engines(hops)
    half = 0.6
    calibration = Calibration(
        "0" * 64, 50.0, FEATURES, (0.0,) * 7, (1.0,) * 7, (0.0,) * 7, math.log(half / (1 - half))
    )
    first.calibration = second.calibration = calibration
    pivot = Pivot(first, second)
    options = TranslationOptions(source_lang="fr", target_lang="de", num_beams=2, confidence=True)
    (kept,) = translate_texts(pivot, [TEXTS[0]], options.replace(min_confidence=0.3))
    assert kept.flags.confidence == pytest.approx(half * half) and not kept.flags.abstained
    (abstained,) = translate_texts(pivot, [TEXTS[0]], options.replace(min_confidence=0.5))  # each hop 0.6 passes
    assert abstained[0][0] == TEXTS[0] and abstained.flags.abstained and abstained.flags.as_json()["pivot"]
    one, two = Flags(confidence=0.5, guards=("loop",)), Flags(confidence=0.8, guards=("loop", "copy"))
    assert (joined_flags(one, two).confidence, joined_flags(one, two).guards) == (0.4, ("loop", "copy"))
    assert joined_flags(one, Flags()).confidence is None  # a hop without a calibration: no confidence


def fake_hops():
    return [ServedModel(FakeEngine("fr", "en"), "fr", "en"), ServedModel(FakeEngine("en", "de"), "en", "de")]


def test_the_server_offers_and_translates_fr_to_de_html_through_english():
    with TestClient(create_app(fake_hops())) as client:
        languages = {entry["code"]: entry["targets"] for entry in client.get("/languages").json()}
        assert languages == {"fr": ["en", "de"], "en": ["de"], "de": []}
        answer = client.post(
            "/translate", json={"q": [POST, "Ouvrir."], "source": "fr", "target": "de", "format": "html"}
        ).json()
        assert answer["translatedText"] == [
            '<p>««Open the <a href="https://example.org/f?a=1&amp;b=2">file</a> %s.»»</p>',
            "««Ouvrir.»»",
        ]  # each hop's «»; the link where the composed alignment puts it; the attribute as written
        assert answer["flags"] == [{"pivot": True}, {"pivot": True}]
        refused = client.post("/translate", json={"q": "x", "source": "de", "target": "fr"}).json()
        assert refused == {"error": "de is not supported"}  # no model reads German: nothing to pivot from


def test_a_file_and_a_suggestion_of_a_pivoted_pair(hops, tmp_path):
    first, second = engines(hops)
    models = [ServedModel(first, "fr", "en"), ServedModel(second, "en", "de")]
    suggestions = Suggestions(SuggestionStore(str(tmp_path / "s.db")), "accept")
    app = create_app(models, files=FileStore(str(tmp_path / "files")), suggestions=suggestions)
    with TestClient(app) as client:
        fields = {"source": "fr", "target": "de"}
        uploaded = client.post("/translate_file", data=fields, files={"file": ("a.txt", "\n".join(TEXTS).encode())})
        download = client.get(uploaded.json()["translatedFileUrl"].replace("http://testserver", ""))
        asked = client.post("/translate", json={"q": TEXTS, **fields}).json()["translatedText"]
        assert download.content.decode() == "\n".join(asked)
        suggested = client.post("/suggest", json={"q": TEXTS[0], "s": "Öffnen Sie die Datei.", **fields}).json()
        assert suggested["success"] is True
        assert client.post("/translate", json={"q": TEXTS[0], **fields}).json()["translatedText"] == (
            "Öffnen Sie die Datei."
        )
        assert (
            client.post("/translate", json={"q": TEXTS[0], "source": "en", "target": "de"}).json()["translatedText"]
            != "Öffnen Sie die Datei."
        )  # remembered for fr→de only


def test_a_suggestion_for_a_pivoted_pair_is_judged_through_the_english(tmp_path):
    first, second = ScoringEngine(), ScoringEngine()
    first.config.source_lang, first.config.target_lang = "fr", "en"
    suggestions = Suggestions(SuggestionStore(str(tmp_path / "s.db")), "accept")
    app = create_app([ServedModel(first, "fr", "en"), ServedModel(second, "en", "de")], suggestions=suggestions)
    with TestClient(app) as client:
        refused = client.post(
            "/suggest", json={"q": "Ouvrir le fichier.", "s": "Öffnen Sie zzz Datei.", "source": "fr", "target": "de"}
        ).json()
    assert refused["error"].startswith("s is unlikely as a translation of q: -9.00 per token")
    assert first.translated == ["Ouvrir le fichier.", "Ouvrir le fichier."]  # its own translation, then the English
    assert second.translated == ["«Ouvrir le fichier.»"]


DIRECTORIES = {"en-de": "en-de-broad"}  # the shipped model of UI messages for en-de


@pytest.mark.slow
@pytest.mark.parametrize(
    "source, target, text, term",
    [
        (
            "fr",
            "de",
            '<p>Le <a href="https://example.org/x">fichier</a> %s n\'a pas pu être <b>ouvert</b>.</p>',
            ("fichier", "Dokument"),
        ),
        (
            "de",
            "fr",
            '<p>Die <a href="https://example.org/x">Datei</a> %s konnte nicht <b>geöffnet</b> werden.</p>',
            ("Datei", "document"),
        ),
    ],
)
def test_the_shipped_models_pivot_html_through_the_server_on_both_engines(source, target, text, term):
    """The html test on real models (fr→en + en→de, de→en + en→fr): a link, a placeholder and a glossary term come
    back, well-formed, the same on both engines."""
    models, outputs = REPO / "models", []
    pairs = (f"{source}-en", f"en-{target}")
    for name in ("transformers", "ctranslate2"):
        served = [
            ServedModel(
                load_engine(str(models / f"transformer-mt-{DIRECTORIES.get(pair, pair)}"), name), *pair.split("-")
            )
            for pair in pairs
        ]
        with TestClient(create_app(served)) as client:
            fields = {"source": source, "target": target, "format": "html", "glossary": [list(term)]}
            answer = client.post("/translate", json={"q": text, **fields}).json()
        paragraph = etree.fromstring(f"<r>{answer['translatedText']}</r>".encode()).find("p")
        (link,), (bold,) = paragraph.findall("a"), paragraph.findall("b")
        assert link.get("href") == "https://example.org/x" and link.text == term[1] and bold.text.strip()
        assert "%s" in "".join(paragraph.itertext()) and 0 < answer["confidence"] < 1 and answer["flags"]["pivot"]
        outputs.append(answer["translatedText"])
    assert outputs[0] == outputs[1]


def test_translate_py_takes_a_pair_of_the_folder_through_english(hops, capsys):
    args = translate_args(["--models", str(hops), "--source_lang", "fr", "--target_lang", "de", "x"])
    assert (args.model, args.pivot_model) == (str(hops / "fr-en"), str(hops / "en-de"))
    flags = ["--engine", "transformers", "--no_progress", "--num_beams", "2", "--no_guards"]
    translate_script.main(["--models", str(hops), "--source_lang", "fr", "--target_lang", "de", *flags, *TEXTS])
    first, second = engines(hops)
    options = TranslationOptions(num_beams=2, guards=False, source_lang="fr", target_lang="de")
    expected = [text[0][0] for text in translate_texts(Pivot(first, second), TEXTS, options)]
    assert capsys.readouterr().out.splitlines() == expected
    with pytest.raises(SystemExit):
        translate_args(["--models", str(hops), "--source_lang", "fr", "--target_lang", "de", "--alignments", "a", "x"])
    assert "translated through English by two models" in capsys.readouterr().err


def test_the_pivot_study_joins_the_splits_on_english_and_measures_each_routed_direction(hops, tmp_path):
    english = ["Open the file.", "Close the dialog window.", "Deletes the selected rows."]
    (tmp_path / "en-fr.tsv").write_text(
        "en\tfr\n" + "".join(f"{line}\t{line} (fr)\n" for line in english + ["Only here."]), encoding="utf-8"
    )
    (tmp_path / "en-de.tsv").write_text(
        "en\tde\n" + "".join(f"{line}\t{line}\n" for line in english[::-1]), encoding="utf-8"
    )
    data = [str(tmp_path / "en-fr.tsv"), str(tmp_path / "en-de.tsv")]
    flags = ["--models", str(hops), "--languages", "fr", "de", "--data", *data, "--engine", "transformers"]
    result = pivot_study.main([*flags, "--output", str(tmp_path / "out.json")])
    assert result["data"]["messages"] == 3  # "Only here." has no German
    measured, refused = result["directions"]["fr-de"], result["directions"]["de-fr"]
    assert measured["route"] == [str(hops / "fr-en"), str(hops / "en-de")] and not refused["measured"]
    first, second = engines(hops)
    options = TranslationOptions(num_beams=4, source_lang="fr", target_lang="de")
    sources = [f"{line} (fr)" for line in english]
    expected = [text[0][0] for text in translate_texts(Pivot(first, second), sources, options)]
    assert [example["pivot"] for example in measured["examples"]] == expected
    assert set(measured["pivot"]) >= {"bleu", "chrf", "seconds", "sentences_per_second"}
