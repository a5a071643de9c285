"""The drift watch: feature changelog and scores against a reference, with Evidently."""
