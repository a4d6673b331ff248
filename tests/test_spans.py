"""Protected spans (transformer_mt.text.spans): placeholders, URLs, e-mail addresses, paths, inline code, numbers and
emoji found in a source, checked and put back where the model lost or changed one, and counted; on every path that
decodes (the command here, with the shipped broader model that drops placeholders)."""

from transformer_mt.scripts import translate as translate_script
from transformer_mt.text.spans import (
    Span,
    SpanReport,
    lost_placeholders,
    lost_spans,
    mask,
    mask_as,
    mask_shared,
    placeholders,
    protected_spans,
    put_back,
    repair,
    repair_counted,
    unmask,
)

from .utils import REPO


def test_lost_placeholders_count_each_occurrence_in_source_order():
    assert lost_placeholders("Unknown database: %s", "Unbekannte Datenbank: %") == ["%s"]
    assert lost_placeholders("%s of %s, {0}", "%s von {0}") == ["%s"]
    assert lost_placeholders("%(min)s and %1$s and {name}", "%(min)s und %1$s und {name}") == []
    assert lost_placeholders("100%% done", "100%% fertig") == []  # a literal percent sign is no placeholder
    assert lost_placeholders("50% discount", "50 Prozent Rabatt") == []


def test_a_placeholder_goes_back_into_the_damaged_word_after_the_aligned_one_or_at_the_end():
    assert put_back("Unknown database: %s", "Unbekannte Datenbank: %", ["%s"], [(2, 2)]) == "Unbekannte Datenbank: %s"
    assert (
        put_back("Select %(min)s items.", "Wählen Sie %(min) Elemente.", ["%(min)s"], [(1, 2)])
        == "Wählen Sie %(min)s Elemente."
    )
    assert put_back("Delete %s now.", "Jetzt %. löschen", ["%s"], [(1, 1)]) == "Jetzt %s. löschen"
    assert put_back("Open {0} now", "Öffnen Sie jetzt", ["{0}"], [(1, 1)]) == "Öffnen Sie {0} jetzt"
    assert put_back("Open {0} now", "Öffnen", ["{0}"], []) == "Öffnen {0}"


def test_repair_aligns_only_what_needs_it_and_names_it(caplog):
    asked = []

    def align(sources, targets):
        asked.append((sources, targets))
        return [[(2, 2)]]

    hypotheses = [[("Unbekannte Datenbank: %", -1.0)], [("Gut.", -0.5)]]
    repaired = repair(["Unknown database: %s", "Good."], hypotheses, ["1", "2"], align)
    assert repaired == [[("Unbekannte Datenbank: %s", -1.0)], [("Gut.", -0.5)]]
    assert asked == [(["Unknown database: %s"], ["Unbekannte Datenbank: %"])]
    assert "Text 1: the model did not write %s" in caplog.text
    assert repair(["Good."], [[("Gut.", None)]], ["1"], lambda *_: 1 / 0) == [[("Gut.", None)]]  # nothing to align


def test_the_command_keeps_the_placeholders_the_shipped_model_drops(capsys):
    translate_script.main(
        [
            "--model",
            str(REPO / "models" / "transformer-mt-en-de-broad"),
            "--no_progress",
            "Unknown database: %s",
            "Using Video Output: %s",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.endswith(": %s") for line in lines), lines


def test_each_kind_is_one_span_and_the_wider_kind_wins_where_two_overlap():
    assert protected_spans("Open https://example.com/a?q=%s&n=1. Now") == [
        Span("url", "https://example.com/a?q=%s&n=1")
    ]
    assert protected_spans("See www.esrf.eu, or mail john.doe@example.org.") == [
        Span("url", "www.esrf.eu"),
        Span("email", "john.doe@example.org"),
    ]
    assert protected_spans("Edit /usr/share/foo, ~/.config/x or C:\\Users\\x; run ./configure.") == [
        Span("path", "/usr/share/foo"),
        Span("path", "~/.config/x"),
        Span("path", "C:\\Users\\x"),
        Span("path", "./configure"),
    ]
    assert protected_spans("Run `ls -l /tmp/a` first") == [Span("code", "`ls -l /tmp/a`")]
    assert protected_spans("%1 of %2, ${HOME}, %(name)s, %-5.2f, %ld, %1$s, {0}, {name}, $1") == [
        Span("placeholder", text)
        for text in ("%1", "%2", "${HOME}", "%(name)s", "%-5.2f", "%ld", "%1$s", "{0}", "{name}", "$1")
    ]
    assert protected_spans("1.5 GB, 1,234 items at 10:30 in version 2.0.1.") == [
        Span("number", "1.5"),
        Span("number", "1,234"),
        Span("number", "10:30"),
        Span("number", "2.0.1"),
    ]
    assert protected_spans("Nice 👍🏽 ❤️") == [Span("emoji", "👍🏽"), Span("emoji", "❤️")]
    assert protected_spans("Hello {{user}}, { { x } }, {{ count }} and %{name}") == [
        Span("placeholder", text) for text in ("{{user}}", "{{ count }}", "%{name}")
    ]  # whole: the model must not write one brace of two
    assert protected_spans("from -3.402823466E+38 to 1.17E-38") == [
        Span("number", "3.402823466E+38"),
        Span("number", "1.17E-38"),
    ]


def test_what_only_looks_like_a_span_is_none():
    assert protected_spans("50% off, 100 % sure, 100%% done and/or km/h, a lone / here") == [
        Span("number", "50"),
        Span("number", "100"),
        Span("number", "100"),
    ]
    assert protected_spans("cannot find `%s' in </body>") == [Span("placeholder", "%s")]  # GNU quotes, a tag
    # words holding digits, and no piece of one ("1" of "16th", "4" of "amd64", "0" of "v2.0")
    assert protected_spans("on the 16th day, the 21st century, amd64, 3D, v2.0, 1.5x zoom") == []
    assert placeholders("50% discount, 100%% done, %d files") == ["%d"]


def test_lost_spans_compare_numbers_by_their_digits_and_the_rest_exactly():
    assert lost_spans("1.5 GB of 1,234 files at 10:30", "1,5 GB von 1.234 Dateien um 10.30 Uhr") == []
    assert lost_spans("version 2", "Version 2") == []
    assert lost_spans("version 2.0.1", "Version 2.1") == [Span("number", "2.0.1")]
    assert lost_spans("See www.example.com or /usr/share/x", "Siehe www.beispiel.com oder /usr/share/x") == [
        Span("url", "www.example.com")
    ]
    assert lost_spans("%s and %s 👍", "%s und") == [Span("placeholder", "%s"), Span("emoji", "👍")]


def test_a_lost_span_of_any_kind_replaces_its_damaged_copy_or_goes_after_the_aligned_word():
    assert put_back("Uses 1.5 GB", "Belegt 1,6 GB", [Span("number", "1.5")], [(1, 1)]) == "Belegt 1.5 GB"
    assert (
        put_back("See www.example.com.", "Siehe www.beispiel.com.", [Span("url", "www.example.com")], [(1, 1)])
        == "Siehe www.example.com."
    )
    # no word aligned: the wrong number nearest the end is mended all the same
    assert put_back("Wait 10 seconds", "Warte 12 Sekunden", [Span("number", "10")], []) == "Warte 10 Sekunden"
    assert (
        put_back("Read /etc/hosts now", "Jetzt lesen", [Span("path", "/etc/hosts")], [(1, 1)])
        == "Jetzt lesen /etc/hosts"
    )
    assert put_back("Great 👍", "Toll", [Span("emoji", "👍")], [(0, 0)]) == "Toll 👍"
    assert put_back("Step 2 of 3", "Schritt zwei von 3", [Span("number", "2")], [(1, 1)]) == "Schritt zwei 2 von 3"


def test_repair_counted_reports_carried_repaired_and_lost_per_sentence(caplog):
    def align(sources, targets):
        return [[(1, 1), (2, 2)]]  # the one pair that needs it

    sources = ["Delete %s files?", "Keep 3 of 4", ""]
    hypotheses = [[("Dateien % löschen?", -1.0), ("%s löschen?", -2.0)], [("", None)], []]
    repaired, reports = repair_counted(sources, hypotheses, ["1", "2", "3"], align)
    assert repaired == [[("Dateien %s löschen?", -1.0), ("%s löschen?", -2.0)], [("", None)], []]
    assert reports == [
        SpanReport(repaired=[Span("placeholder", "%s")]),
        SpanReport(lost=[Span("number", "3"), Span("number", "4")]),
        SpanReport(),
    ]
    assert "Text 1: the model did not write %s; put back" in caplog.text
    assert "Text 2: the model did not write 3, 4, and it could not be put back" in caplog.text
    good, counted = repair_counted(["At 10:30"], [[("Um 10.30 Uhr", None)]], ["1"], lambda *_: 1 / 0)
    assert good == [[("Um 10.30 Uhr", None)]] and counted == [SpanReport(carried=[Span("number", "10:30")])]


def test_mask_replaces_each_span_by_a_numbered_token_and_unmask_puts_them_back():
    text = "Copy %s to /usr/share/doc (1,234.5 MB) from https://example.com/a, see {0}."
    masked, spans = mask(text)
    assert masked == "Copy {0} to {1} ({2} MB) from {3}, see {4}."  # the text's own {0} is a span like the others
    assert [span.text for span in spans] == ["%s", "/usr/share/doc", "1,234.5", "https://example.com/a", "{0}"]
    assert unmask(masked, spans) == (text, [])
    assert mask("Click Save.") == ("Click Save.", [])
    assert mask("%s and %s") == ("{0} and {1}", [Span("placeholder", "%s")] * 2)  # each occurrence its own token
    assert mask("{1} of %s")[0] == "{0} of {1}"


def test_unmask_reports_the_spans_whose_token_the_translation_lost():
    _, spans = mask("Open %s in {name} at 10:30")
    assert unmask("{2}: {0} öffnen", spans) == ("10:30: %s öffnen", [Span("placeholder", "{name}")])
    assert unmask("{0} und {0} {7}", spans)[0] == "%s und %s {7}"  # a token written twice; one past the spans stays
    assert unmask("nichts", spans)[1] == spans


def test_a_forced_beginning_shows_its_sentences_spans_as_their_tokens():
    _, spans = mask("Copy %s to %d, then %s.")  # {0} {1} {2}
    assert mask_as("Kopiere %d", spans) == "Kopiere {1}"
    assert mask_as("%s und %s und %s", spans) == "{0} und {2} und %s"  # each span once, in order
    assert mask_as("Kopiere /tmp", spans) == "Kopiere /tmp"  # not one of the sentence's spans: kept


def test_mask_shared_masks_the_spans_both_sides_hold_with_one_numbering():
    source, target, spans = mask_shared(
        "Copy %s to %d files (3 of 1,234.5) {0}", "Kopiere %d Dateien nach %s (3 von 1.234,5)"
    )
    # numbers by their digits, the rest by their text; the source's {0} has no partner, stays, and 0 is skipped
    assert source == "Copy {1} to {2} files ({3} of {4}) {0}"
    assert target == "Kopiere {2} Dateien nach {1} ({3} von {4})"
    assert [span.text for span in spans] == ["%s", "%d", "3", "1,234.5"]
    assert mask_shared("%s or %s", "%s") == ("{0} or %s", "{0}", [Span("placeholder", "%s")])  # n-th with n-th
    assert mask_shared("Save the file.", "Datei speichern.") == ("Save the file.", "Datei speichern.", [])
    # where both sides hold every span, the source is masked as translation's `mask` masks it
    assert mask_shared("Open %s at 10:30", "%s um 10:30 öffnen")[0] == mask("Open %s at 10:30")[0]


def test_placeholders_are_compared_as_multisets_and_the_extra_ones_removed():
    from transformer_mt.text.spans import drop_extra, extra_placeholders, span_problems

    source = "%s: Cannot rename %s to %s: %s"
    written = "%s: Kann %s nicht in %s umbenennen: %s %s"  # five where the source has four
    assert [span.text for span, _, _ in extra_placeholders(source, written)] == ["%s"]
    assert drop_extra(source, written) == ("%s: Kann %s nicht in %s umbenennen: %s", [Span("placeholder", "%s")])
    assert [span.text for span in span_problems(source, written)] == ["%s"]
    twice = "Bericht in %(place)s%(place)s%(endnotes)s"
    assert drop_extra("Report in %(place)s%(endnotes)s", twice)[0] == "Bericht in %(place)s%(endnotes)s"
    assert drop_extra("Open {0}", "{1} öffnen {0}")[0] == "öffnen {0}"  # invented: at the start, the space after
    assert drop_extra("100%% done", "100%% fertig") == ("100%% fertig", [])  # a literal %% is no placeholder


def test_repair_removes_a_placeholder_written_twice_and_reports_it():
    sources, hypotheses = ["Delete %s?"], [[("%s löschen %s?", -1.0), ("%s löschen?", -2.0)]]
    repaired, reports = repair_counted(sources, hypotheses, ["1"], lambda sources, targets: [[] for _ in sources])
    assert repaired == [[("%s löschen?", -1.0), ("%s löschen?", -2.0)]]
    assert [span.text for span in reports[0].removed] == ["%s"] and reports[0].lost == []


def test_a_star_width_or_precision_is_part_of_its_placeholder():
    # printf's `*` takes the width or precision from an argument: `%*s` and `%.*s` are one placeholder each
    assert placeholders("%*sIgnored from undo %d:") == ["%*s", "%d"]
    assert placeholders('entry "%*.*s" from %.*s, %-*d') == ["%*.*s", "%.*s", "%-*d"]
    assert lost_placeholders("%*sIgnored from undo %d:", "%*Ignoriert aus %d:") == ["%*s"]


def test_removing_an_extra_placeholder_never_leaves_one_its_neighbours_make():
    from transformer_mt.text.spans import drop_extra

    # removing the `{}` inside `{{}}` joins `{` and `}` into a new `{}`: it goes too
    kept, removed = drop_extra("Real IP: %C30[$3%C30]", "Echte IP: %C30{{}}{$3")
    assert placeholders(kept) == ["%C30", "$3"] and [span.text for span in removed] == ["{}", "{}"]


def test_repair_writes_printfs_sequential_placeholders_in_the_source_order(caplog):
    # printf takes its unnumbered arguments in order: "%u (%llu" for "%llu (%u" prints garbage, and msgfmt
    # --check-format refuses it; numbered, named and Qt's placeholders may move
    source = "%s offset %lld startblock %llu (%u/%u) count %llu flag %u"
    hypotheses = [[("%s bietet %lld mit %u (%llu/%u) %u %llu", -1.0)]]
    with caplog.at_level("WARNING"):
        repaired, reports = repair_counted([source], hypotheses, ["1"], None)
    assert repaired[0][0][0] == "%s bietet %lld mit %llu (%u/%u) %llu %u"
    assert "in the source's order" in caplog.text and reports[0].lost == []
    for moved in (("%1$s of %2$d", "%2$d von %1$s"), ("Page %1 of %2", "%2 von %1"), ("%(a)s %(b)d", "%(b)d %(a)s")):
        assert repair_counted([moved[0]], [[(moved[1], -1.0)]], ["1"], None)[0][0][0][0] == moved[1]


def test_repair_escapes_a_bare_percent_sign_in_a_printf_message():
    # "%d%% (%d)" came back as "%d % (%d)": `% (` is no conversion, and msgfmt refuses the message
    repaired, _ = repair_counted(
        ["%d%% (%d) long sentences", "Use 100% of it"],
        [[("%d % (%d) lange Sätze", -1.0)], [("Nutze 100 % davon", -1.0)]],
        ["1", "2"],
        None,
    )
    assert [sentence[0][0] for sentence in repaired] == ["%d %% (%d) lange Sätze", "Nutze 100 % davon"]


def test_weblate_s_markers_are_placeholders_kept_whole():
    """Weblate sends a placeholder as `[X<offset>X]` (LibreTranslate backend) or `@@PH<n>@@` (LLM backends); the
    number inside is not a number of the text, and the brackets belong to the marker."""
    assert protected_spans("Are you sure you want to remove [X32X]? 2 of @@PH1@@ [X5 X]") == [
        Span("placeholder", "[X32X]"),
        Span("number", "2"),
        Span("placeholder", "@@PH1@@"),
    ]
    assert lost_placeholders("Remove [X32X]?", "[X32X wirklich entfernen?") == ["[X32X]"]  # the broken one is lost
