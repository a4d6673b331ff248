"""The placeholder study's pieces (format flags as gettext's msgfmt checks them, the multiset comparison, the
reviewer's copy of a catalogue) and the study end to end through translate.py on the tiny model."""

import json

import pytest

from transformer_mt.documents.files import PLACEHOLDERS_DIFFER
from transformer_mt.experiments import placeholder_study as study

from .utils import require, require_program


@pytest.mark.parametrize(
    "msgid, flag",
    [
        ("Cannot rename %s to %s: %s", "c-format"),
        ("%1$s of %2$d", "c-format"),
        ("%lu bytes (%.1f%%)", "c-format"),
        ("%1$s and %s", None),  # positional and plain mixed: not a C format string
        ("%d%s done %", None),  # a bare %: msgfmt could not parse the msgid
        ("... in %(place)s%(endnotes)s", "python-format"),
        ("%(count)d of %s", None),  # named and unnamed mixed
        ("Show %r", "python-format"),  # %r is Python's alone
        ("Network {1} of user {2}", "python-brace-format"),
        ("Loading '{old_format}' as {0:>3}, {{literal}}", "python-brace-format"),
        ("{} was corrupted.", None),  # gettext 0.21 parses no empty field
        ("Page %1 of %2", "qt-format"),
        ("Unset ${HOME}", "sh-format"),
        ("%C23*%O$t%C28[%C18$1%C28]%O", None),  # HexChat's colours and strftime's letters: gettext has no check
    ],
)
def test_each_entry_gets_the_format_flag_its_placeholders_imply(msgid, flag):
    assert study.format_flag(msgid) == flag


def test_placeholders_are_compared_as_multisets():
    source = "%s: Cannot rename %s to %s: %s"
    assert study.same_placeholders(source, "%s: %s kann nicht in %s umbenannt werden: %s")
    assert not study.same_placeholders(source, "%s: %s kann nicht in %s umbenannt werden: %s %s")  # one written twice
    assert not study.same_placeholders(source, "%s: %s kann nicht umbenannt werden: %s")
    assert study.multiset_difference("in %(place)s%(endnotes)s", "in %(place)s%(place)s") == {
        "missing": ["%(endnotes)s"],
        "extra": ["%(place)s"],
    }
    assert study.cause("%1 of %2", "%2 von %1", marked=False) == "reordered"
    assert study.cause("%s of %d", "%s von %d %d", marked=True) == "extra"
    assert study.cause("%s of %d", "%s von", marked=False) == "missing, unmarked"
    assert study.cause("%s of %d", "%s von %s", marked=True) == "swapped"


def test_a_catalogue_carries_the_flags_and_msgfmt_checks_every_flagged_entry(tmp_path):
    require("polib", "the placeholder study writes .po files")
    require_program("msgfmt", "the study's format check (Debian's gettext; .ci/run installs it)")
    messages = [
        ("Cannot rename %s to %s", "gettext:a"),
        ("Page %1 of %2", "gettext:b"),
        ("Cannot rename %s to %s", "gettext:c"),
        ("Module {1}", "gettext:d"),
        ("Hi %C23", "gettext:e"),
    ]
    catalogue = study.build_po(messages)
    assert [entry.flags for entry in catalogue] == [
        ["c-format"],
        ["qt-format"],
        ["c-format"],
        ["python-brace-format"],
        [],
    ]
    assert [entry.msgctxt for entry in catalogue] == ["gettext:a 0", None, "gettext:c 2", None, None]
    probe = study.probe_flags(catalogue, tmp_path)
    assert probe["unchecked"] == [] and probe["flags"]["c-format"] == {"flagged": 2, "checked": 2}


def test_the_reviewers_copy_keeps_fuzzy_only_where_the_placeholders_differ(tmp_path):
    polib = require("polib", "the placeholder study writes .po files")
    require_program("msgfmt", "the study's format check (Debian's gettext; .ci/run installs it)")
    catalogue = polib.POFile(wrapwidth=0)
    catalogue.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    catalogue.append(polib.POEntry(msgid="Open %s", msgstr="%s öffnen", flags=["fuzzy", "c-format"]))
    catalogue.append(
        polib.POEntry(
            msgid="Copy %s to %s", msgstr="%s kopieren", flags=["fuzzy", "c-format"], tcomment=PLACEHOLDERS_DIFFER
        )
    )
    written = tmp_path / "out.po"
    catalogue.save(str(written))
    assert study.msgfmt(written)["errors"] == 0  # every entry fuzzy: msgfmt checks none
    assert study.msgfmt(written, use_fuzzy=True)["errors"] == 1
    assert study.accepted_copy(written, tmp_path / "accepted.po") == 1
    rows = study.read_back(written)
    assert [(row["kept"], row["marked_for_review"], row["cause"]) for row in rows] == [
        (True, False, "kept"),
        (False, True, "missing"),
    ]
    assert study.msgfmt(tmp_path / "accepted.po")["errors"] == 0


@pytest.mark.slow
def test_the_study_runs_translate_py_on_a_po_file_end_to_end(saved_tiny_model, tmp_path):
    require("polib", "the placeholder study writes .po files")
    require_program("msgfmt", "the study's format check (Debian's gettext; .ci/run installs it)")
    data = tmp_path / "data"
    data.mkdir()
    (data / "validation.tsv").write_text(
        "en\tde\torigin\nOpen the file.\tDatei öffnen.\tgettext:a\nCannot open %s\t%s kann nicht geöffnet werden\t"
        "gettext:a\nPage %1 of %2\tSeite %1 von %2\tgettext:b\nSaved {0} files.\t{0} Dateien gespeichert.\t"
        "gettext:c\n",
        encoding="utf-8",
    )
    output = tmp_path / "result.json"
    study.main(
        [
            "--data",
            str(data),
            "--models",
            str(saved_tiny_model),
            "--engines",
            "transformers",
            "--limit",
            "2",
            "--output",
            str(output),
        ]
    )
    result = json.loads(output.read_text())
    assert result["messages"] == 2 and result["flags"] == {"c-format": 1, "qt-format": 1}
    (run,) = result["runs"]
    assert run["messages"] == 2 and run["fuzzy"] == 2 and 0 <= run["kept"] <= 2
    assert run["msgfmt"]["as_written"]["errors"] == 0  # all fuzzy
    # what the untrained model could not keep is marked for review, so msgfmt accepts the rest
    assert run["msgfmt"]["not_marked_for_review"]["errors"] == 0
    assert result["commit"] and result["matmul_gflops"] > 0 and "--engine transformers" in run["translate_command"]
