"""PeerTrain's ML core, shared by the peer runtime and the aggregator.

- :mod:`peertrain.ml.zoo`: models built from JSON specs (never code from the network);
- :mod:`peertrain.ml.graph`: a researcher's module as a layer graph of allow-listed ops,
  and its rebuilding;
- :mod:`peertrain.ml.weights`: safetensors codec, deltas, norms, update validation
  (its refusals coded by :mod:`peertrain.ml.problems`);
- :mod:`peertrain.ml.aggregation`: strategies (FedAvg, FedProx, FedAdam, trimmed mean,
  median) with order-independent, bit-reproducible results;
- :mod:`peertrain.ml.training`: a peer's local training and holdout evaluation;
- :mod:`peertrain.ml.export`: ``final.pt`` and ``final.safetensors``.

Pure functions and classes: no network, no event log, no bucket.
"""

__all__ = [
    "aggregation",
    "device",
    "errors",
    "export",
    "graph",
    "problems",
    "training",
    "weights",
    "zoo",
]
