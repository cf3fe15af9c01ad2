"""OpenAPI error answers of the dataset API: the common ones, 401 and 403 (every route
is for users, within their quotas) on every route."""

from __future__ import annotations

from functools import partial

from peertrain.common.app.responses import errors as _errors

__all__ = ["errors"]

errors = partial(_errors, 401, 403)
