"""TensorFlow 2: the step trace of `tf.function` training (custom loops, Keras `fit`).

Eager TensorFlow 2 creates no Session; its training steps are traced functions.
TensorFlow applies every callable in its (private) ``FUNC_GRAPH_TRANSFORMS`` list
to each graph it traces, before the graph becomes a function: that is where the
probes go in (``transform``), with the same discovery (``graph_points``), probes
and ring as the Session path, and rows read back eagerly by the process's ring
reader (``reader``). ``tracing`` reads which function is being traced, and
``attach`` installs the hook (checking the TensorFlow version) and holds the
request in force: the environment, dynamic mode, or ``start_tf2_profiling``.
"""
