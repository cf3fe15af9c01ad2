"""The dataset service's use cases: the shell around the pure core; they take the
application (:class:`peertrain.dataset.application.DatasetApp`)."""

__all__: list[str] = []
