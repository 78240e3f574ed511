"""The Session path (TF1 style): profiling attached to each `tf.compat.v1.Session` when it is made.

`base_session` holds the package's one `BaseSession.__init__` patch; `attach_on_creation`
resolves a new session's request; `profiler` decides which runs are iterations;
`recorder` records them from the in-graph ring; `step_stats_capture` takes
task_trace from TensorFlow's per-run step stats. The TensorFlow 2 path is the
sibling room `functions/`.
"""
