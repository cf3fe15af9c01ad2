"""``python -m peertrain.testkit.auth probe ...``."""

from .probe import main

main()
