"""``npu-tf-prof diff``: did a change make training slower, where, and how sure are we.

One module per job: ``sides`` (read a run as ``view`` reads it; each rank's and
model's steady iterations, as ``summary`` picks them), ``stats`` (one phase's
change: medians, p90s, Hodges–Lehmann shift, Mann–Whitney 95% interval),
``ops`` (task-traced ops whose time per iteration changed most), ``compare``
(models and ranks matched, shape differences, the verdict and exit code),
``render`` (text and JSON). Reads raw data only; never imports TensorFlow.
"""
