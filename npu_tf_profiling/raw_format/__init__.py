"""The raw-format room: the on-disk contract, both directions, without TensorFlow.

``layout`` (names and paths), ``training_frame`` (step-trace records as binary
frames, both directions), ``training_record`` (the older JSON-line form, read
only), ``task_record``
(task_trace.bin framing and tolerant unframing), ``metadata`` (info.json and
friends), ``append_writer`` (append-only, crash-safe raw files),
``atomic`` (all-or-nothing rewrites of reports and metadata), ``errors``.
Runtime and reports both import this room; it imports neither.
The format itself is described in ``docs/output_format.md``.
"""
