"""Accounts: register, who am I, and the admin's list and disable."""

from __future__ import annotations

from fastapi import APIRouter, Depends, status

from peertrain.auth.api.deps import AuthDep, ClientAddress, no_unknown_query
from peertrain.auth.api.requests import RegisterRequest, UserDisable
from peertrain.auth.api.responses import errors
from peertrain.auth.api.views import UserAdminView, UserPublic
from peertrain.auth.store import UserRecord
from peertrain.auth.usecases import accounts
from peertrain.common.app import Page, PagingDep
from peertrain.common.errors import NotFound
from peertrain.common.security import AdminUser, CurrentUser

__all__ = ["router"]

router = APIRouter(tags=["users"], dependencies=[Depends(no_unknown_query)])


def _public(user: UserRecord) -> UserPublic:
    return UserPublic(id=user.id, username=user.username, roles=list(user.roles))


def _admin_view(user: UserRecord) -> UserAdminView:
    return UserAdminView(
        id=user.id,
        username=user.username,
        roles=list(user.roles),
        disabled=user.disabled,
        created_at=user.created_at,
    )


@router.post(
    "/register",
    status_code=status.HTTP_201_CREATED,
    summary="Create a user account",
    responses=errors(409, 429),
)
async def register(body: RegisterRequest, auth: AuthDep, address: ClientAddress) -> UserPublic:
    """Passwords: at least 12 characters, no composition rules, not a common one.
    At most 10 registrations per client address per hour (configurable): then 429."""
    user = await accounts.register(auth, body.username, body.password, address=address)
    return _public(user)


@router.get("/me", summary="The calling user", responses=errors(401, 403))
async def me(user: CurrentUser, auth: AuthDep) -> UserPublic:
    """Peers are refused (403): this is a user's route."""
    record = await auth.users.get(user.subject)
    if record is None:
        raise NotFound("no such user")
    return _public(record)


@router.get("/users", summary="Every account (admin)", responses=errors(401, 403))
async def list_users(_: AdminUser, auth: AuthDep, paging: PagingDep) -> Page[UserAdminView]:
    """Accounts by creation time."""
    found = await auth.users.list(limit=paging.fetch, offset=paging.offset)
    return Page[UserAdminView].of([_admin_view(u) for u in found], paging)


@router.post(
    "/users/{user_id}/disable",
    summary="Disable an account (admin)",
    responses=errors(401, 403, 404, 409),
)
async def disable_user(
    user_id: str, admin: AdminUser, auth: AuthDep, body: UserDisable | None = None
) -> UserAdminView:
    """Appends ``user.disabled``: every service refuses the user's tokens from then on."""
    reason = body.reason if body else None
    return _admin_view(
        await accounts.disable_user(auth, user_id, actor=admin.subject, reason=reason)
    )
