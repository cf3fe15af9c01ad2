"""Models as declarative layer graphs (``{"arch": "graph", ...}``).

:func:`to_graph` turns a researcher's ``nn.Module`` into a
:class:`~peertrain.common.specs.GraphSpec` on their machine; :class:`GraphNet` rebuilds
one from the fixed table of allow-listed ops (:mod:`.ops`). The format and its limits:
``docs/model-graphs.md``.
"""

from .net import GraphNet
from .trace import to_graph, verify_graph

__all__ = ["GraphNet", "to_graph", "verify_graph"]
