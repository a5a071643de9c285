"""The DIN ranker, as the rest of the project imports it.

The network lives in ``jobs.ranker.network``, a torch-only module that training
also copies beside the weights for the served PyTorch model (`ranker_torch`).
"""

from jobs.ranker.network import DIN, DINConfig

__all__ = ["DIN", "DINConfig"]
