"""``python -m peertrain.client.cli``: the ``peertrain`` command without its script."""

from .app import main

main()
