"""PeerTrain's aggregator: validates peers' updates, folds them into model versions,
evaluates each version on the job's holdout and exports the final model.

Entry point: ``python -m peertrain.aggregator`` (see :mod:`.app` for the wiring).
"""

__all__: list[str] = []
