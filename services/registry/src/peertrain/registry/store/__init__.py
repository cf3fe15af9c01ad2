"""The durable copy of the registry's read model, in its own database."""

from .peers import ReadModel, ReadModelStore, from_doc, to_doc

__all__ = ["ReadModel", "ReadModelStore", "from_doc", "to_doc"]
