"""Signing keys: the public JWKS and the admin's rotation."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from peertrain.auth.api.deps import AuthDep, no_unknown_query
from peertrain.auth.api.responses import errors
from peertrain.auth.api.views import Jwks
from peertrain.auth.usecases import keys
from peertrain.common.security import AdminUser

__all__ = ["router"]

router = APIRouter(tags=["keys"], dependencies=[Depends(no_unknown_query)])


@router.get("/.well-known/jwks.json", summary="Public keys that verify access tokens")
async def jwks(auth: AuthDep, response: Response) -> Jwks:
    """Every published key with its ``kid``: the active one and those still retiring.

    Services do not fetch this (they learn keys from ``auth.keys_rotated``); it is
    here for outside verifiers and operators.
    """
    response.headers["Cache-Control"] = "public, max-age=60"
    return Jwks(keys=await keys.published(auth))


@router.post(
    "/keys/rotate", summary="Rotate the signing key (admin)", responses=errors(401, 403, 409)
)
async def rotate(admin: AdminUser, auth: AuthDep) -> Jwks:
    """A new key signs from now on; the old one stays published until its last token
    expired. Answers the new JWKS, the new key first."""
    await keys.rotate(auth, actor=admin.subject)
    return Jwks(keys=await keys.published(auth))
