"""Sessions: password login (OAuth2 password form), refresh rotation, logout."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response, status

from peertrain.auth.api.deps import AuthDep, ClientAddress, no_unknown_query
from peertrain.auth.api.requests import PasswordForm, RefreshRequest
from peertrain.auth.api.responses import errors
from peertrain.auth.api.views import TokenPair
from peertrain.auth.domain.tokens import IssuedTokens
from peertrain.auth.usecases import sessions

__all__ = ["router"]

router = APIRouter(tags=["tokens"], dependencies=[Depends(no_unknown_query)])


def _pair(issued: IssuedTokens) -> TokenPair:
    assert issued.refresh_token is not None
    return TokenPair(
        access_token=issued.access_token,
        refresh_token=issued.refresh_token,
        expires_in=issued.expires_in,
    )


@router.post("/token", summary="Log in with a username and password", responses=errors(401, 429))
async def token(
    form: Annotated[PasswordForm, Depends()],
    auth: AuthDep,
    address: ClientAddress,
) -> TokenPair:
    """An unknown user and a wrong password get the very same answer. After 5 failed
    attempts for one username from one address, or 20 from one address whatever the
    usernames, within a 15-minute window (configurable): 429 until it ends."""
    return _pair(await sessions.login(auth, form.username, form.password, address=address))


@router.post("/refresh", summary="Trade a refresh token for a new pair", responses=errors(401))
async def refresh(body: RefreshRequest, auth: AuthDep) -> TokenPair:
    """The refresh token is spent; presenting it again revokes the whole session."""
    return _pair(await sessions.refresh(auth, body.refresh_token))


@router.post(
    "/logout",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="End the session of a refresh token",
    response_class=Response,
    responses=errors(),
)
async def logout(body: RefreshRequest, auth: AuthDep) -> Response:
    """Always 204 (RFC 7009): an unknown token reveals nothing."""
    await sessions.logout(auth, body.refresh_token)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
