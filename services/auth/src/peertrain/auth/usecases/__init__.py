"""What the auth service does, one module per concern; the application
(:class:`peertrain.auth.application.AuthApp`), its routes and hooks call these."""

__all__: list[str] = []
