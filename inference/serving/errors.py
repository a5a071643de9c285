"""The serving package's exceptions: one root, narrow subclasses that say what to do."""


class ServingError(RuntimeError):
    """Root of everything `inference.serving` raises on purpose."""


class PublishError(ServingError):
    """An artifacts directory could not be published into a model repository."""


class RolloutError(ServingError):
    """Triton did not load, or a probe request failed on, the version being swapped in."""
