"""Serving the ranker on Triton: publish model versions, load them, shift traffic, roll back.

`python -m inference.serving publish|rollout|rollback|status --help`. The model
repository layout is `inference/model_repository/` (config.pbtxt per model and the
python backend's model.py); published versions live in the repository Triton
serves (STREAMREC_TRITON_MODEL_REPOSITORY, default `.stack/models`).
"""
