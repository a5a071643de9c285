"""The file names of a ranker artifacts directory, which training writes and serving reads.

Standard library only (unlike ``schemas.ranking``, which re-exports these): the GPU
serving benchmark publishes on a host that has torch and numpy but not the
project's other dependencies.
"""

MANIFEST_FILE = "manifest.json"
VOCAB_FILE = "vocab.npz"
EMBEDDINGS_FILE = "item_embeddings.npy"
CATEGORIES_FILE = "item_categories.npy"
POPULAR_FILE = "popular_items.json"
# The PyTorch model as `ranker_torch` serves it: weights, hyper-parameters, and the
# network's source (a torch-only module), so a version runs the code it was trained with.
WEIGHTS_FILE = "model.pt"
MODEL_CONFIG_FILE = "model_config.json"
NETWORK_FILE = "network.py"
