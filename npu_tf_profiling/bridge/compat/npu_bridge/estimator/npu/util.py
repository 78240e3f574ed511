"""`npu_bridge.estimator.npu.util`: set_iteration_per_loop (runs n iterations per sess.run) and graph helpers."""
from npu_tf_profiling.bridge.npu_bridge.graph_util import set_graph_exec_config, variable_initializer_in_host
from npu_tf_profiling.bridge.npu_bridge.iteration_loop import IterationPerLoop, set_iteration_per_loop

__all__ = ["set_iteration_per_loop", "IterationPerLoop", "variable_initializer_in_host", "set_graph_exec_config"]
