"""Bridges to other checkpoints and engines: import MarianMT/Opus-MT, warm-start from BERT, export to CTranslate2.

The CTranslate2 export needs the `bridges` extra (`pip install "transformer-mt[bridges]"`), so it is imported on
its own: `from transformer_mt.bridges.ctranslate2 import export_ctranslate2`.
"""

from .bert import WarmStartReport, convert_bert, warm_start_from_bert
from .marian import convert_marian, convert_marian_model


__all__ = ["WarmStartReport", "convert_bert", "convert_marian", "convert_marian_model", "warm_start_from_bert"]
