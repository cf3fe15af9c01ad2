"""A researcher's own ``nn.Module`` as a job's model: turned into a graph spec here, on
the researcher's machine (peers get the graph, never code).

Needs torch and ``peertrain-ml`` installed beside the client; the rest
of the SDK does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ClientError

__all__ = ["with_module"]


def with_module(spec: Mapping[str, Any], model: Any, example_input: Any) -> dict[str, Any]:
    """``spec`` with its ``model`` replaced by ``model``'s graph
    (:func:`peertrain.ml.graph.to_graph`, checked to give ``model``'s outputs on
    ``example_input``).

    Raises
    ------
    ClientError
        Without ``example_input``, without torch and ``peertrain-ml``, or for a module
        that cannot be expressed as a graph of standard layers (the error names the
        node and the operation).
    """
    if example_input is None:
        raise ClientError(
            "example_input is needed with model: a batch of inputs shaped like the data "
            "(e.g. torch.zeros(1, 1, 28, 28))"
        )
    try:
        from peertrain.ml.graph import to_graph
    except ImportError as exc:
        raise ClientError(
            f"sending an nn.Module needs torch and peertrain-ml ({exc}): "
            "install torch and peertrain-ml beside peertrain-client"
        ) from None
    graph = to_graph(model, example_input)
    return {**spec, "model": graph.model_dump(mode="json")}
