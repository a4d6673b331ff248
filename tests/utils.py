"""What the tests share: tiny configs and models, random batches, the tiny training recipe, saved tiny models.

CPU, seeded, no network (but for the one module marked `network`: transformers' common tests, whose sdist is
downloaded once and cached). Fixtures live in conftest.py; test modules import helpers from here, never from each
other.
"""

import contextlib
from pathlib import Path

import torch

import transformer_mt  # noqa: F401  (registers the Auto classes)
from transformer_mt import (
    POSITION_EMBEDDING_TYPES,
    TransformerMTConfig,
    TransformerMTForConditionalGeneration,
    presets,
    train_tokenizer,
)


REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "en-de"
SCRIPTS = REPO / "scripts"
POSITION_TYPES = list(POSITION_EMBEDDING_TYPES)
ABSOLUTE_POSITION_TYPES = ["sinusoidal", "learned"]  # add a vector to the embeddings (the others act in attention)
RELATIVE_POSITION_TYPES = [name for name in POSITION_TYPES if name not in ABSOLUTE_POSITION_TYPES]


def require(module: str, reason: str):
    """Import and return an optional dependency. Without it a test skips locally, with `reason`; under CI=true it
    fails, since CI installs every one and a broken install must not pass as skipped tests. The one way a test
    module asks for an optional package (tests/test_test_rules.py holds to it); at module level it covers the
    module."""
    import importlib
    import os

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError as error:
        message = f"{module} is not installed ({type(error).__name__}: {error}): {reason}"
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"{message}; CI=true installs every optional dependency, so this is a broken install", pytrace=False
            )
        pytest.skip(message, allow_module_level=True)


def wait_until_listening(process, port: int, seconds: float = 120) -> None:
    """Return once `process` (a server started by a test) accepts connections on loopback `port`; fail with its
    output if it exits first or `seconds` pass."""
    import contextlib
    import socket
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.2)
    raise AssertionError(
        f"the server did not listen on port {port} within {seconds} s: "
        f"{process.communicate(timeout=30)[0] if process.poll() is not None else 'still running'}"
    )


def require_program(name: str, reason: str) -> str:
    """The path of a program a test runs (a Debian package's: redis-server, ...), as `require` asks for a module:
    without it a test skips locally with `reason`, and fails under CI=true, which installs it (.ci/install-debian)."""
    import os
    import shutil

    import pytest

    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed: {reason}"
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"{message}; CI=true installs it (.ci/install-debian), so this is a broken install", pytrace=False
            )
        pytest.skip(message)
    return path


def tiny_config(**overrides) -> TransformerMTConfig:
    """presets.TINY's model with a 99-token vocabulary, every dropout on (so that train/eval modes differ), and
    the languages of SENTENCES' source side (translation splits sentences by it)."""
    sizes = {key: value for key, value in presets.TINY.items() if key in TransformerMTConfig.__annotations__}
    kwargs = dict(
        sizes,
        vocab_size=99,
        max_position_embeddings=64,
        dropout=0.1,
        attention_dropout=0.1,
        activation_dropout=0.1,
        source_lang="en",
        target_lang="de",
    )
    kwargs.update(overrides)
    return TransformerMTConfig(**kwargs)


def tiny_model(seed: int = 0, **overrides) -> TransformerMTForConditionalGeneration:
    torch.manual_seed(seed)
    return TransformerMTForConditionalGeneration(tiny_config(**overrides)).eval()


def batch(seed: int = 0, batch_size: int = 3, length: int = 7, vocab_size: int = 99, pad_token_id: int = 0):
    """Random source ids ending in </s> (id 2) with right padding of different lengths per row."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(4, vocab_size, (batch_size, length), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    for row in range(1, batch_size):
        cut = max(2, length - 2 * row)
        input_ids[row, cut:] = pad_token_id
        attention_mask[row, cut:] = 0
    lengths = attention_mask.sum(1)
    input_ids[torch.arange(batch_size), lengths - 1] = 2
    return input_ids, attention_mask


def remove_weight(checkpoint_dir, key: str) -> None:
    """Delete one tensor from a saved checkpoint's model.safetensors (to test missing-weight errors)."""
    from safetensors.torch import load_file, save_file

    path = f"{checkpoint_dir}/model.safetensors"
    weights = load_file(path)
    del weights[key]
    save_file(weights, path, metadata={"format": "pt"})


# Tiny training recipe for transformer_mt.training on 200 shipped pairs (a run of 60 steps takes seconds).
TINY = [
    "--preset",
    "tiny",  # transformer_mt.presets.TINY: the tiny model the tests, tools and quick modes share
    "--data",
    str(DATA),
    "--max_train_samples",
    "200",
    "--max_eval_samples",
    "16",
    "--max_predict_samples",
    "16",
    "--normalize_before",
    "true",
    "--learning_rate",
    "3e-3",
    "--warmup_steps",
    "5",
    "--lr_scheduler_type",
    "inverse_sqrt",
    "--logging_steps",
    "5",
    "--report_to",
    "none",
    "--disable_tqdm",
    "true",
    "--seed",
    "0",
    "--generation_num_beams",
    "2",
    "--generation_max_length",
    "17",
]

SENTENCES = ["Click the Save button.", "Klicken Sie auf Speichern.", "Close the dialog.", "Schließen Sie den Dialog."]


def overfit(
    model,
    inputs: dict,
    labels: torch.Tensor,
    *,
    loss_below: float,
    max_steps: int = 1000,
    lr: float = 3e-3,
    check_every: int = 25,
) -> float:
    """Train `model` on one batch until its loss in eval mode is below `loss_below`, so that a test fixture behaves
    the same whatever initial weights a seed draws; fails if `max_steps` do not get it there. Returns the loss."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(1, max_steps + 1):
        model.train()
        model(**inputs, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % check_every == 0:
            model.eval()
            with torch.no_grad():
                loss = model(**inputs, labels=labels).loss.item()
            if loss < loss_below:
                return loss
    raise AssertionError(f"the fixture did not fit its batch: eval loss {loss:.4f} after {max_steps} steps")


def save_tiny(directory: Path, position_type: str = "sinusoidal", **overrides):
    """A tiny model and a tokenizer trained on SENTENCES, saved together in `directory`; returns both."""
    tokenizer = train_tokenizer(SENTENCES * 5, vocab_size=300, min_frequency=1)
    model = tiny_model(vocab_size=len(tokenizer), position_embedding_type=position_type, **overrides)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return model, tokenizer


# The arrows of docs/development.md's Layout: scripts -> transformer_mt -> modeling -> configuration; tokenization
# stands apart. The setuptools folder mapping hides them from tools, so `import_violations` reads every import.
SOURCE_PACKAGES = {
    "transformer_mt": "transformer_mt",
    "modeling": "transformer_mt.modeling",
    "configuration": "transformer_mt.configuration",
    "tokenization": "transformer_mt.tokenization",
    "scripts": "transformer_mt.scripts",
}
_THIRD_PARTY_ALLOWED = {
    "transformer_mt.modeling": {"torch", "transformers"},
    "transformer_mt.configuration": {"huggingface_hub", "transformers"},  # @strict lives in huggingface_hub
    "transformer_mt.tokenization": {"tokenizers", "transformers"},
}
_OWN_PACKAGES_ALLOWED = {
    "transformer_mt.modeling": ("transformer_mt.modeling", "transformer_mt.configuration"),
    "transformer_mt.configuration": ("transformer_mt.configuration",),
    "transformer_mt.tokenization": ("transformer_mt.tokenization",),
}


def copy_sources(root: Path, *more: str) -> Path:
    """The source folders (and `more` folders) copied under `root`, to show a check catching a breach."""
    import shutil

    for folder in [*SOURCE_PACKAGES, *more]:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    return root


def _imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file of `package`, relative imports resolved."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolved against the package the file installs into
                parts = package.split(".")
                module = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            # `from a import b` may import the module a.b: check both names
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def import_violations(packages: dict[Path, str]) -> list[str]:
    """Every import that breaks the layout's arrows, for folders mapped to their installed package names.

    `packages` maps a folder to the package its files install as: SOURCE_PACKAGES for a checkout, or an installed
    `transformer_mt` and its subfolders for a wheel. A file belongs to the deepest mapped folder that holds it.
    """
    import sys as _sys

    folders = {folder.resolve(): package for folder, package in packages.items()}
    files = {path for folder in folders for path in folder.rglob("*.py")}
    violations = []
    for path in sorted(files):
        folder = max((f for f in folders if f in path.parents), key=lambda f: len(f.parts))
        package = folders[folder]
        file_package = ".".join([package, *path.parent.relative_to(folder).parts])
        for line, module in _imported_modules(path, file_package):
            top = module.split(".")[0]
            is_own = top == "transformer_mt"
            is_script = module.startswith("transformer_mt.scripts") or top == "scripts"
            where = f"{path}:{line} imports {module}"
            if package == "transformer_mt.scripts":
                if is_script:
                    violations.append(f"{where}: a script never imports another script")
            elif is_script:
                violations.append(f"{where}: the library never imports scripts")
            elif package in _OWN_PACKAGES_ALLOWED:
                if is_own and not module.startswith(_OWN_PACKAGES_ALLOWED[package]):
                    violations.append(f"{where}: {package} may import only {_OWN_PACKAGES_ALLOWED[package]}")
                elif not is_own and top not in _sys.stdlib_module_names | _THIRD_PARTY_ALLOWED[package]:
                    violations.append(
                        f"{where}: {package} may import only the standard library and "
                        f"{sorted(_THIRD_PARTY_ALLOWED[package])}"
                    )
    return violations


def train(output_dir, *flags):
    """transformer_mt.training on the tiny recipe, in this process; returns the trainer."""
    from transformer_mt import training

    return training.run(*training.parse_args([*TINY, "--output_dir", str(output_dir), *map(str, flags)]))


def train_command(output_dir, *flags, processes: int = 1, accelerate_config: str | None = None) -> list[str]:
    """scripts/train.py on the tiny recipe as a command line: one process, or `processes` under torchrun, or under
    `accelerate launch` with one of configs/accelerate (on the CPU they form a gloo group: training.parse_args
    defaults to use_cpu without an accelerator)."""
    import sys

    launcher = [sys.executable]
    if accelerate_config:
        launcher = [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(REPO / "configs" / "accelerate" / accelerate_config),
            "--num_processes",
            str(processes),
            "--mixed_precision",
            "no",
        ]
    elif processes > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    return [*launcher, str(SCRIPTS / "train.py"), *TINY, "--output_dir", str(output_dir), *map(str, flags)]


def command_env(**extra) -> dict:
    """The environment for a training subprocess: one thread per process, quiet tokenizers."""
    import os

    return dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", **extra)


def saved_weights(directory) -> dict:
    from safetensors.torch import load_file

    return load_file(Path(directory) / "model.safetensors")


# A small English-German corpus that tiny models are trained to copy (train_copy_model).
COPY_CORPUS = [
    "Click the Save button.",
    "Close the dialog window.",
    "Select the cells that you want to sort.",
    "Deletes the selected rows.",
    "Open the file.",
    "Choose Format - Cells and click the Numbers tab.",
    "The chart is inserted in the current document.",
    "Press Enter to confirm the entry.",
    "Klicken Sie auf Speichern.",
    "Schließen Sie das Fenster.",
    "Wählen Sie die Zellen aus.",
    "Löscht die ausgewählten Zeilen.",
    "Öffnen Sie die Datei.",
    "Drücken Sie die Eingabetaste.",
]


def train_copy_model(tokenizer, targets=None, **overrides):
    """A tiny model trained for a few dozen steps to copy its input (or to give `targets`, one per COPY_CORPUS
    line), so its outputs are decided, not near-ties."""
    model = tiny_model(
        vocab_size=len(tokenizer),
        init_std=0.2,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        **overrides,
    )
    batch = tokenizer(COPY_CORPUS, text_target=targets, return_tensors="pt", padding=True)
    labels = batch.pop("labels") if targets else batch["input_ids"]
    labels = labels.masked_fill(labels == tokenizer.pad_token_id, -100)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(40):
        optimizer.zero_grad()
        model(**batch, labels=labels).loss.backward()
        optimizer.step()
    model.eval()
    if model.config.use_final_logits_bias:
        with torch.no_grad():
            model.final_logits_bias.normal_(std=0.5)  # a buffer training leaves at zero; make it matter
    return model


# A corpus for a tiny MarianMT checkpoint's sentencepiece model (marian_checkpoint).
MARIAN_TEXT = [
    "Click the Save button.",
    "Klicken Sie auf Speichern.",
    "Close the dialog window.",
    "Schließen Sie das Fenster.",
    "Select the cells that you want to sort.",
    "Wählen Sie die Zellen aus, die Sie sortieren möchten.",
    "Deletes the selected rows.",
    "Löscht die ausgewählten Zeilen.",
] * 20


def marian_checkpoint(path: Path, share: bool = True, language_tokens: tuple[str, ...] = ()):
    """A randomly initialised MarianMTModel with a real (tiny) sentencepiece tokenizer, saved to `path`; its
    vocabulary lists `language_tokens` (`>>fra<<`, ...) before `<pad>`, as an Opus-MT model of several targets'."""
    import json

    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    path.mkdir(parents=True, exist_ok=True)
    corpus = path / "corpus.txt"
    corpus.write_text("\n".join(MARIAN_TEXT), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(path / "spm"),
        vocab_size=60,
        character_coverage=1.0,
        bos_id=-1,
        eos_id=1,
        unk_id=2,
        pad_id=-1,
        minloglevel=2,
    )
    corpus.unlink()
    processor = spm.SentencePieceProcessor(model_file=str(path / "spm.model"))
    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    for token in (*language_tokens, "<pad>"):
        vocab[token] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    tokenizer = MarianTokenizer(str(path / "spm.model"), str(path / "spm.model"), str(path / "vocab.json"))
    torch.manual_seed(0)
    config = MarianConfig(
        vocab_size=len(vocab),
        decoder_vocab_size=None if share else len(vocab),
        share_encoder_decoder_embeddings=share,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        activation_function="swish",
        pad_token_id=vocab["<pad>"],
        decoder_start_token_id=vocab["<pad>"],
        eos_token_id=1,
        forced_eos_token_id=1,
    )
    model = MarianMTModel(config).eval()
    with torch.no_grad():
        model.final_logits_bias.normal_()  # real checkpoints carry a non-zero bias
    model.generation_config.bad_words_ids = [[config.pad_token_id]]
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    for spm_file in ("spm.model", "spm.vocab"):
        (path / spm_file).unlink()
    return model


# The least gap between a greedy step's best and second-best log-probability (`greedy_margins`) for two engines, or
# two batchings, to be expected to make the same choice: float32 log-probabilities of generate() and CTranslate2
# differ by about 1e-5 (1.05e-5 at most over test_tags' two_targets model's 200 greedy translations), so a choice
# decided by 100 times that is the same in both. Nearer ties go either way, and weak models have them.
DECIDED = 1e-3


def greedy_margins(model, sources: list[list[int]], outputs: list[list[int]], forced: int = 0) -> list[float]:
    """For each source (ids) and the output a greedy search of `model` wrote for it (ids after the decoder start
    token, to `</s>`), how near its choices came to a tie: the least gap between the best and the second-best
    log-probability of its steps, teacher-forced, leaving out the first `forced` (a forced language token). An
    output whose margin is above DECIDED is the one any float32 computation of the model writes."""
    assert not model.training
    start = model.generation_config.decoder_start_token_id
    margins = []
    with torch.inference_mode():
        for source, output in zip(sources, outputs, strict=True):
            logits = model(input_ids=torch.tensor([source]), decoder_input_ids=torch.tensor([[start, *output[:-1]]]))
            best = logits.logits[0, forced:].float().log_softmax(-1).topk(2).values
            margins.append(float((best[:, 0] - best[:, 1]).min()) if len(best) else float("inf"))
    return margins


def copy_tokenizer():
    """The tokenizer copy-trained models read: a 320-token BPE over COPY_CORPUS."""
    return train_tokenizer(COPY_CORPUS * 4, vocab_size=320)


def save_copy_model(
    directory: Path, generation: dict | None = None, languages: tuple[str, str] = ("en", "de"), **overrides
):
    """A copy-trained tiny model (`train_copy_model`) saved with its tokenizer as training saves one: `languages`
    (source, target; en -> de unless given), and a generation config of beam 4 with early_stopping=True (or
    `generation`'s settings). Returns the (model, tokenizer) loaded back from `directory`."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = copy_tokenizer()
    model = train_copy_model(tokenizer, **overrides)
    model.config.source_lang, model.config.target_lang = languages
    default = dict(num_beams=4, early_stopping=True, max_length=64)
    model.generation_config.update(**(default if generation is None else generation))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return AutoModelForSeq2SeqLM.from_pretrained(directory).eval(), AutoTokenizer.from_pretrained(directory)


def save_context_model(directory: Path, tokenizer=None, **overrides):
    """A copy-trained tiny model (`train_copy_model`, `overrides` to its config) saved as trained with context
    (`source_context`), its segment-1 vector made to matter, en -> de, greedy (CTranslate2 decodes it alike);
    `tokenizer` (default `copy_tokenizer()`) is the one it reads. Returns (model, tokenizer) as saved."""
    import torch

    tokenizer = tokenizer or copy_tokenizer()
    model = train_copy_model(tokenizer, source_context=True, **overrides)
    with torch.no_grad():
        model.model.encoder.embeddings.token_type_embeddings.weight[1].normal_(std=1.0)
    model.config.source_lang, model.config.target_lang = "en", "de"
    model.generation_config.update(num_beams=1, max_length=64)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return model, tokenizer


@contextlib.contextmanager
def serve_process(*args, env=None):
    """(the process, its URL): serve.py with `args` on a free loopback port, once it accepts connections; stopped
    (SIGTERM) at the end unless it has ended already."""
    import socket
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "serve.py"), *args, "--port", str(port)],
        env=env or command_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until_listening(process, port)
        yield process, f"http://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=60)
