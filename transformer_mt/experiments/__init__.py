"""Research beside the library, as transformers' and fairseq's examples sit beside theirs: the library never imports
it (tests/test_layout.py holds that); it imports the library like any user.

- `studies` (what the studies share: the recipe, the runner, one JSON per run), `position_study` (the position
  types across seeds and input lengths; what it measures in `position_sets`, its tables and figure in
  `position_report`), `recipe_search` (candidate recipes across seeds);
- `benchmarks` (speed against MarianMT, CTranslate2 and the engines, batches, positions, the server under load);
- `spans_study` (protected spans carried by the model, repaired, lost; BLEU and chrF with and without repair);
- `context_study` (a model trained with context and register tags: messages told apart by their context, the UI
  test split with and without context, the register asked for, against an untagged baseline);
- `gpu_check` (what a CUDA machine is checked for);
- `translation_hashes` (what the shipped models translate, hashed, before and after a change; `hash_compare`
  compares two runs, `hash_recheck` translates their differing lines again in a third checkout) and `bitcheck`
  (the same fixed-step run at two commits, each from its own worktree, its weights and test translations
  hashed);
- `language_data` (a language pair's corpus from ../shared/data's help text and UI messages), `language_runs` (the
  pairs' training runs' validations as they go) and `language_models` (a run made into a shipped model: float16,
  calibrated, scored, its card written from those files by `model_cards`).

The commands in scripts/ (position_study.py, recipe_search.py, benchmark*.py, load_test.py, gpu_check.py) run them.
"""
