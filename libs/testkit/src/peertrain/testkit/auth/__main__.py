"""``python -m peertrain.auth.testing probe ...``."""

from .probe import main

main()
