"""fp_point / bp_point discovery for TensorFlow training graphs.

``find_trace_points(graph)`` returns a :class:`TracePoints` (fp, bp, the
gradient tensors, the data inputs, the all-reduce groups, the iteration end
and the global step) with one reason per choice. ``GraphIndex`` is the fast
ancestor/descendant index the runtime uses to keep its probes on the path of
the fetched train op.

The rules, and why each is what it is, are in docs/trace_points.md; each rule
group is one module here (``updates``, ``iteration_end``, ``regions``,
``data_inputs``, ``fp``, ``collectives``, ``bp``, ``user_points``), and
``discovery`` wires them in order.

Importing this package does not import TensorFlow; loading a file does.
"""
from npu_tf_profiling.graph_points.discovery import Candidates, Discovery, analyse, find_trace_points
from npu_tf_profiling.graph_points.errors import GraphLoadError, TracePointsError
from npu_tf_profiling.graph_points.index import GraphIndex
from npu_tf_profiling.graph_points.loading import LoadedGraph, load_graph
from npu_tf_profiling.graph_points.points import TracePoints

__all__ = [
    "Candidates",
    "Discovery",
    "GraphIndex",
    "GraphLoadError",
    "LoadedGraph",
    "TracePoints",
    "TracePointsError",
    "analyse",
    "find_trace_points",
    "load_graph",
]
