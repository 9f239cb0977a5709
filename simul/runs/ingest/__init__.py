"""`simul ingest`: score the per-update outputs of a system simul did not decode.

Each format module (``ssbd_ref``, ``simulstream_log``, ``simuleval_log``, ``simul_outputs``, and for
long-form talks ``omnisteval_jsonl`` and ``simulstreaming``) reads a file into
:class:`~simul.runs.ingest.system.SystemOutputs`; ``rundir`` joins them to a stream file by id and writes a
normal, complete run directory that `simul score`, `diff`, `show` and `export` read unchanged. The records of
long-form streams (talks) carry the talk-level facts the format gives (``talks``).
"""
