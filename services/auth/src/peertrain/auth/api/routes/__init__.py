"""Auth's routers, one per resource."""

from . import keys, peers, tokens, users

ROUTERS = (users.router, tokens.router, keys.router, peers.router)

__all__ = ["ROUTERS", "keys", "peers", "tokens", "users"]
