"""The suggestion filter's precision and recall (issue 42): real corrections against garbage.

Real corrections are the references of the sentences the shipped help-text model gets wrong: its own translation
(CTranslate2, each source whole, no guards) has a sentence chrF below `WRONG_CHRF`; the first `CORRECTIONS` of them
in the split's order. Garbage, one of each kind per such sentence (seeded): keyboard noise ("aaaaaa", "asdf asdf",
...), French or Spanish text (`OTHER_LANGUAGES`, written for this study), the English source copied as the target,
German about something else (another wrong sentence's reference, shuffled), and the model's own output truncated to
its first half of words or doubled. Every filter of `serving.suggestion_filter` reads the same numbers the server
reads. `--tune` searches the length bounds, the letters language identification needs and the margin on the
validation split (the most F1 over the pooled set; the constants the filter ships with are its choice); the report
is both splits under those constants.

    python -m transformer_mt.experiments.suggestion_study            # docs/results/suggestions/filter.json
    python -m transformer_mt.experiments.suggestion_study --tune     # the thresholds' search on validation
"""

import argparse
import itertools
import json
import random
import sys
import time
from pathlib import Path

from transformer_mt.calibration import pairs_of, sentence_chrf
from transformer_mt.engines import load_engine
from transformer_mt.experiments.studies import git_commit
from transformer_mt.machine import matmul_gflops
from transformer_mt.serving.suggestion_filter import (
    TUNED_ON,
    Thresholds,
    model_numbers,
    model_reason,
    own_translations,
    text_numbers,
    text_reason,
)


MODEL, DATA = "models/transformer-mt-en-de", "data/en-de"
WRONG_CHRF = 50.0  # a sentence chrF below this: the model got it wrong (the calibration's threshold of "good")
CORRECTIONS = 200
NOISE = ("aaaaaa", "asdf asdf", "xxxxxxxxxxxx", "test", "...", "lol", "qwertzuiop", "123456", "?????", "ok ok ok ok")
OTHER_LANGUAGES = (
    "Cliquez sur le bouton Enregistrer pour conserver vos modifications.",
    "Ouvrez le fichier dans un nouvel onglet.",
    "Les paramètres du réseau ont été mis à jour.",
    "Impossible de trouver le document demandé.",
    "Sélectionnez une imprimante dans la liste.",
    "Voulez-vous vraiment supprimer ce dossier ?",
    "Le mot de passe doit contenir au moins huit caractères.",
    "Fermer la fenêtre",
    "Options avancées",
    "Ajoutez une signature à vos messages électroniques.",
    "La mise à jour du système est terminée.",
    "Haga clic en el botón Guardar para conservar los cambios.",
    "Abra el archivo en una pestaña nueva.",
    "La configuración de la red se ha actualizado.",
    "No se encontró el documento solicitado.",
    "Seleccione una impresora de la lista.",
    "¿Está seguro de que desea eliminar esta carpeta?",
    "La contraseña debe tener al menos ocho caracteres.",
    "Cerrar la ventana",
    "Opciones avanzadas",
    "Añada una firma a sus mensajes de correo electrónico.",
    "La actualización del sistema ha terminado.",
)
KINDS = ("noise", "other language", "source copied", "unrelated German", "truncated", "doubled")
RESULTS = Path("docs/results/suggestions")


def collect(engine, split: str, seed: int = 0) -> list[dict]:
    """The split's real corrections and garbage, each with the filters' numbers: `{"kind", "q", "s", ...}`."""
    sources, references = pairs_of(DATA, split)
    own = own_translations(engine, sources, "de")
    wrong = [i for i, chrf in enumerate(sentence_chrf(own, references)) if chrf < WRONG_CHRF][:CORRECTIONS]
    rng = random.Random(seed)
    shuffled = wrong[1:] + wrong[:1]
    rng.shuffle(shuffled)
    items = []
    for n, (i, j) in enumerate(zip(wrong, shuffled)):
        words = own[i].split()
        garbage = {
            "noise": NOISE[n % len(NOISE)],
            "other language": rng.choice(OTHER_LANGUAGES),
            "source copied": sources[i],
            "unrelated German": references[j if j != i else wrong[n - 1]],
            "truncated": " ".join(words[: len(words) // 2]) if len(words) >= 4 else None,
            "doubled": f"{own[i]} {own[i]}",
        }
        items.append({"kind": "correction", "q": sources[i], "s": references[i], "own": own[i]})
        items += [{"kind": kind, "q": sources[i], "s": s, "own": own[i]} for kind, s in garbage.items() if s]
    found = model_numbers(engine, [(item["q"], item["s"]) for item in items], "de", [item["own"] for item in items])
    for item, numbers in zip(items, found):
        item.update(text_numbers(item["q"], item["s"], TUNED_ON), **numbers)
    return items


def reason(item: dict, thresholds: Thresholds) -> str | None:
    return text_reason(item, "de", thresholds) or model_reason(item, thresholds)


def measure(items: list[dict], thresholds: Thresholds) -> dict:
    """Recall (real corrections accepted), precision (accepted that are real), each garbage kind's refusal rate."""
    accepted = {kind: 0 for kind in ("correction", *KINDS)}
    counts = dict.fromkeys(accepted, 0)
    for item in items:
        counts[item["kind"]] += 1
        accepted[item["kind"]] += reason(item, thresholds) is None
    garbage_accepted = sum(accepted[kind] for kind in KINDS)
    recall = accepted["correction"] / counts["correction"]
    precision = accepted["correction"] / max(1, accepted["correction"] + garbage_accepted)
    return {
        "corrections": counts["correction"],
        "garbage": sum(counts[kind] for kind in KINDS),
        "recall": round(recall, 4),
        "precision": round(precision, 4),
        "f1": round(2 * precision * recall / max(1e-9, precision + recall), 4),
        "refused": {kind: f"{counts[kind] - accepted[kind]}/{counts[kind]}" for kind in KINDS},
    }


def tune(items: list[dict]) -> list[tuple[float, Thresholds]]:
    """Every grid point's F1 on `items`, best first."""
    grid = itertools.product(
        (0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75),
        (1.4, 1.5, 1.6, 1.7, 1.8, 2.0, 2.5),
        (5, 10, 15, 20),
        (2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0),
    )
    found = [
        (measure(items, thresholds)["f1"], thresholds)
        for thresholds in (
            Thresholds(length_ratio=(low, high), language_min_chars=chars, margin=margin)
            for low, high, chars, margin in grid
        )
    ]
    return sorted(found, key=lambda pair: -pair[0])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune", action="store_true", help="Search the thresholds on the validation split.")
    parser.add_argument("--results_dir", default=str(RESULTS))
    args = parser.parse_args(argv)
    results = {
        "commit": git_commit(),
        "gflops_before": round(matmul_gflops(), 1),
        "model": MODEL,
        "data": DATA,
        "wrong_chrf": WRONG_CHRF,
        "thresholds": vars(Thresholds()),
    }
    start = time.monotonic()
    engine = load_engine(MODEL, "auto")
    results["engine"] = engine.name
    if args.tune:
        validation = collect(engine, "validation")
        for f1, thresholds in tune(validation)[:10]:
            print(f1, thresholds, json.dumps(measure(validation, thresholds)), file=sys.stderr)
        return
    for split in ("validation", "test"):
        results[split] = measure(collect(engine, split), Thresholds())
        print(split, json.dumps(results[split]), file=sys.stderr)
    results["seconds"] = round(time.monotonic() - start)
    results["gflops_after"] = round(matmul_gflops(), 1)
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "filter.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
