"""Test support for PeerTrain's tests and benchmarks, outside every shipped distribution.

One module (or package) per side it helps with, named after the distribution it drives:

- :mod:`peertrain.testkit.common`: lane ports, service processes, isolated runs, MLflow,
  the pre-filled event log (``python -m peertrain.testkit.common.prefill``)
- :mod:`peertrain.testkit.auth`: the auth service and a probe service as processes
  (``python -m peertrain.testkit.auth probe``)
- :mod:`peertrain.testkit.registry`, :mod:`~peertrain.testkit.dataset`,
  :mod:`~peertrain.testkit.orchestrator`, :mod:`~peertrain.testkit.aggregator`: each
  service as a process
- :mod:`peertrain.testkit.peer`: real peer runtimes as processes (``PeerProcess``)
- :mod:`peertrain.testkit.cli`: the ``peertrain`` CLI as a subprocess (``CliProcess``)
"""

__all__: list[str] = []
