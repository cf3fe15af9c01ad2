"""Text the store can hold: the type of every free-text or id field of a request body.

PostgreSQL (under FerretDB) refuses a NUL character in text, in a write and in a query
alike, so a NUL that reached either would fail with a 500. Request fields that reach the
store are declared with these types: the OpenAPI document says so (a ``pattern``), and a
body holding a NUL there is a 422 in the one error shape before anything runs. (Paths
are guarded by :class:`peertrain.common.app.middleware.NulPathGuard`, and the dataset
service's multipart fields by its form reader.)
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

__all__ = ["NO_NUL", "Id", "Name"]

NO_NUL = r"^[^\x00]*$"
"""A pattern: any text without a NUL character."""

Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=NO_NUL)]
"""A name a person gives (a job's, a dataset's): 1-200 characters, no NUL."""

Id = Annotated[str, StringConstraints(min_length=1, max_length=100, pattern=NO_NUL)]
"""The id of a resource, as a caller names it: 1-100 characters, no NUL."""
