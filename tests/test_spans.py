"""Placeholders (transformer_mt.spans): found in a source, and put back where the model lost or changed one, on
every path that decodes (the command here, with the shipped broader model that drops them)."""

from transformer_mt.scripts import translate as translate_script
from transformer_mt.spans import lost_placeholders, put_back, repair

from .utils import REPO


def test_lost_placeholders_count_each_occurrence_in_source_order():
    assert lost_placeholders("Unknown database: %s", "Unbekannte Datenbank: %") == ["%s"]
    assert lost_placeholders("%s of %s, {0}", "%s von {0}") == ["%s"]
    assert lost_placeholders("%(min)s and %1$s and {name}", "%(min)s und %1$s und {name}") == []
    assert lost_placeholders("100%% done", "100%% fertig") == []  # a literal percent sign is no placeholder
    assert lost_placeholders("50% discount", "50 Prozent Rabatt") == []


def test_a_placeholder_goes_back_into_the_damaged_word_after_the_aligned_one_or_at_the_end():
    assert put_back("Unknown database: %s", "Unbekannte Datenbank: %", ["%s"], [(2, 2)]) == "Unbekannte Datenbank: %s"
    assert put_back("Select %(min)s items.", "Wählen Sie %(min) Elemente.", ["%(min)s"], [(1, 2)]) == \
        "Wählen Sie %(min)s Elemente."
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
    translate_script.main(["--model", str(REPO / "models" / "transformer-mt-en-de-broad"), "--no_progress",
                           "Unknown database: %s", "Using Video Output: %s"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.endswith(": %s") for line in lines), lines
