"""The DIN ranker: model, ONNX export and the training job (``python -m jobs.ranker``)."""
