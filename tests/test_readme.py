"""The README's Python quick start runs as written."""

import re
from pathlib import Path


README = Path(__file__).resolve().parents[1] / "README.md"


def test_quick_start_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "README has no python example"
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    assert (tmp_path / "my-model" / "model.safetensors").exists()
    assert namespace["ids"].shape[0] == 1 and namespace["loss"].ndim == 0
