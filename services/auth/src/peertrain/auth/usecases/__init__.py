"""What the auth service does, one module per concern; routes and hooks call these."""

from .context import AuthContext, IssuedTokens

__all__ = ["AuthContext", "IssuedTokens"]
