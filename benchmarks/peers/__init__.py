"""The workbench against other programs: Siconos on its own data, in a process of its own
(``python -m benchmarks.peers.bench_peers``; ``siconos_peer.py`` and ``siconos_plain.py`` are scripts the
system interpreter runs, ``peer_process`` their driver), and the independent readers of the exported model
files (``export_readers``, run by :mod:`benchmarks.timing.bench_export` ``--readers`` and tests/test_export.py)."""
