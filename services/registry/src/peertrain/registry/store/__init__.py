"""The durable copy of the registry's read model, in its own database."""

from .peers import ReadModelStore, from_doc, to_doc

__all__ = ["ReadModelStore", "from_doc", "to_doc"]
