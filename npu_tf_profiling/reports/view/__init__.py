"""``npu-tf-prof view``: one self-contained, offline HTML page of charts (plotly.js inlined).

One module per job: ``build`` (what PATH holds, where the page goes),
``page`` (the document, plotly loaded only here), ``phases`` (the numbers
drawn for one model: stack parts, bins past 10,000 iterations, distribution,
slowest iterations), ``model_section`` (one PROF folder), ``task_section``
(top ops of a task-traced window), ``cluster_section`` (ranks × steps, the
slow-rank verdict, per-rank medians), ``compare_section`` (``--compare``: the
diff of two runs, each phase's two distributions overlaid). Reads raw data only, through the other
report modules' readers; writes the page and nothing else; never imports TensorFlow.
"""
