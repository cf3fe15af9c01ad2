"""OpenAPI error answers of the auth API: the common ones, 400 (a body that does not
parse) on every route."""

from __future__ import annotations

from functools import partial

from peertrain.common.app.responses import errors as _errors

__all__ = ["errors"]

errors = partial(_errors, 400)
