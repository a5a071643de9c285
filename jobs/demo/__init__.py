"""``make demo``: the pipeline's main job on real data, on the embedded local stack."""
