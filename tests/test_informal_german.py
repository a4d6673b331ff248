"""German Sie rewritten to du (transformer_mt.experiments.informal_german): each role a formal Sie plays, on
sentences from the en-de corpora, and the targets the rewrite leaves out rather than guess."""

import pytest

from transformer_mt.experiments.informal_german import imperative, informal, second_person


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        # imperatives at a clause's start, with a separable prefix, a strong verb and a relative clause
        (
            "Browse the folder in which you want to publish your bookmark. Create a new folder if necessary.",
            "Wählen Sie den Ordner, in dem Sie Ihr Lesezeichen veröffentlichen wollen. Legen Sie nötigenfalls einen "
            "neuen Ordner an.",
            "Wähle den Ordner, in dem du dein Lesezeichen veröffentlichen willst. Lege nötigenfalls einen neuen "
            "Ordner an.",
        ),
        (
            "Enter a new PIN to unlock your SIM card",
            "Geben Sie eine neue PIN ein, um Ihre SIM-Karte zu entsperren",
            "Gib eine neue PIN ein, um deine SIM-Karte zu entsperren",
        ),
        # inverted modal, question, subordinate clause ending in its verb, the sentence's capital
        (
            "Do you want to permanently delete the selected file?",
            "Möchten Sie die ausgewählte Datei dauerhaft löschen?",
            "Möchtest du die ausgewählte Datei dauerhaft löschen?",
        ),
        (
            "You should probably always use 'on path', unless you are threadmilling!",
            'Sie sollten wahrscheinlich immer "on path" verwenden, es sei denn, Sie sind beim Gewindefräsen!',
            'Du solltest wahrscheinlich immer "on path" verwenden, es sei denn, du bist beim Gewindefräsen!',
        ),
        (
            "The dialog shrinks so that you can see more of the sheet.",
            "Der Dialog verkleinert sich, damit Sie mehr von der Tabelle sehen.",
            "Der Dialog verkleinert sich, damit du mehr von der Tabelle siehst.",
        ),
        # declarative inversion with a full verb ("here you find"), objects, Ihnen, possessives
        (
            "For the TimeValue function, however, you can pass a string.",
            "Bei der Funktion TimeValue übergeben Sie hingegen eine Zeichenfolge.",
            "Bei der Funktion TimeValue übergibst du hingegen eine Zeichenfolge.",
        ),
        (
            "Lets you customize the context menus.",
            "Lässt Sie die Kontextmenüs anpassen.",
            "Lässt dich die Kontextmenüs anpassen.",
        ),
        (
            "Allows you to modify a defined print range.",
            "Erlaubt es Ihnen, einen definierten Druckbereich zu ändern.",
            "Erlaubt es dir, einen definierten Druckbereich zu ändern.",
        ),
        (
            "This package does not install the desktop for you.",
            "Dieses Paket wird nicht die Arbeitsumgebung für Sie installieren.",
            "Dieses Paket wird nicht die Arbeitsumgebung für dich installieren.",
        ),
        ("Change your own filter", "Ihren eigenen Filter ändern", "Deinen eigenen Filter ändern"),
        # an object after a verb with a subject of its own; an imperative before punctuation; Ihnen opening
        ("We would like to inform you.", "Wir möchten Sie informieren.", "Wir möchten dich informieren."),
        ("Please wait.", "Bitte warten Sie.", "Bitte warte."),
        ("You like it.", "Ihnen gefällt es.", "Dir gefällt es."),
        # a possessive that starts a sentence after another keeps its capital
        ("Done. Your file is saved.", "Fertig. Ihre Datei ist gespeichert.", "Fertig. Deine Datei ist gespeichert."),
        # reflexive beside its subject
        ("Log in to your account", "Melden Sie sich bei Ihrem Konto an", "Melde dich bei deinem Konto an"),
    ],
)
def test_each_role_of_a_formal_sie_is_rewritten_to_du(source, target, expected):
    assert informal(source, target) == expected


@pytest.mark.parametrize(
    ("source", "target"),
    [
        # "if you ..., you get": the second verb could be read as an imperative; the count of "you"s tells
        ("If you select it, you get a list.", "Wenn Sie es auswählen, erhalten Sie eine Liste."),
        # a subordinate clause with two verbs joined by "und" (which would both need rewriting)
        (
            "You can reorder them by selecting a command and clicking Move Up.",
            "Sie können sie anordnen, indem Sie einen Befehl auswählen und auf Nach oben klicken.",
        ),
        ("Nothing to rewrite here.", "Hier gibt es nichts."),
    ],
)
def test_a_target_the_rules_cannot_place_is_left_out(source, target):
    assert informal(source, target) is None


@pytest.mark.parametrize(
    ("verb", "present", "command"),
    [
        ("speichern", "speicherst", "speichere"),
        ("sammeln", "sammelst", "sammle"),
        ("öffnen", "öffnest", "öffne"),
        ("finden", "findest", "finde"),
        ("schließen", "schließt", "schließe"),
        ("eingeben", "eingibst", "eingib"),
        ("herunterladen", "herunterlädst", "herunterlade"),
        ("einschalten", "einschaltest", "einschalte"),  # ends like "halten", but weak
        ("erhalten", "erhältst", "erhalte"),
        ("versehen", "versiehst", "versieh"),
        ("Können", "Kannst", "Könne"),
        ("wären", "wärst", "wäre"),
    ],
)
def test_verbs_conjugate_in_the_second_person_singular(verb, present, command):
    assert second_person(verb) == present
    if verb != "Können":  # a modal has no imperative of its own; the rewrite never asks for one
        assert imperative(verb) == command
