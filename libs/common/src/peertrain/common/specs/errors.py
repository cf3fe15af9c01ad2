"""The one error of the spec contract."""

from __future__ import annotations

from peertrain.common.errors import ValidationFailed

__all__ = ["SpecInvalid"]


class SpecInvalid(ValidationFailed):
    """A model, feature, training or aggregation spec is not acceptable.

    ``detail`` lists the problems as ``{"loc": ..., "msg": ...}`` items.
    """

    status_code = 422
    code = "spec_invalid"
