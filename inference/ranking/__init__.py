"""The ranker's contract shared by training, serving and the worker."""
