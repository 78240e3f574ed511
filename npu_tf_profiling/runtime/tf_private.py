"""Every private TensorFlow symbol the package relies on, in one place, with the versions it was checked against.

Profiling a graph means wiring control edges into it after it is built and
reading TensorFlow's own frames while it traces: TensorFlow has no public API for
either. Scattered through the code, such uses break silently on an upgrade and
nobody can say which ones a new version must be checked for. So each one is
registered here (`PRIVATE_SYMBOLS`: where it lives, what it is for, who uses it),
the call sites go through the helpers below, and `tests/test_tf_private.py`
resolves every entry on the installed TensorFlow (`make test` on 2.15,
`make check-latest` on the newest) and fails on a private use outside this module.

Not listed: the generated protocol buffer modules (`tensorflow.core.*_pb2`, a
stable wire format), and the upstream module paths the bridge serves to users'
scripts (`bridge` TF 1.15 paths and contrib areas: names it provides, not uses).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Iterable

CHECKED_VERSIONS = ((2, 15), (2, 16), (2, 17), (2, 18), (2, 19), (2, 20), (2, 21))
"""The TensorFlow versions these symbols were checked for. The tests resolve every entry on 2.15.1 (`make test`)
and on the newest, 2.21 (`make check-latest`); on another version the TensorFlow 2 hook is not installed
(`functions.attach`: one warning, the Session path still works)."""


@dataclass(frozen=True)
class PrivateSymbol:
    """`module` and `attribute` (a dotted path inside it; empty for the module itself) name a private piece of TensorFlow."""

    module: str
    attribute: str
    why: str
    used_in: str
    # The newest (major, minor) TensorFlow that ships it (tensorflow-estimator and Keras 2 end with 2.15), None if
    # every checked version has it. Its user says what it does without it; the test resolves it up to this version.
    until: tuple[int, int] | None = None


SESSION_MODULE = "tensorflow.python.client.session"
TRANSFORM_MODULE = "tensorflow.python.eager.polymorphic_function.transform"
VERSIONS_MODULE = "tensorflow.python.framework.versions"
EAGER_CONTEXT_MODULE = "tensorflow.python.eager.context"
NEST_MODULE = "tensorflow.python.util.nest"
FRAMEWORK_CONFIG_MODULE = "tensorflow.python.framework.config"
HOST_READ_METHODS = (
    ("tensorflow.python.data.ops.iterator_ops", "OwnedIterator", "_next_internal"),
    ("tensorflow.python.distribute.input_lib", "DistributedIterator", "get_next"),
)
FUNCTION_CALL_METHOD = ("tensorflow.python.eager.polymorphic_function.polymorphic_function", "Function", "__call__")
TRACE_FRAME = ("tensorflow.python.eager.polymorphic_function.tracing_compilation", "_create_concrete_function")
BODY_FRAME = ("tensorflow.python.ops.control_flow_util_v2", "create_new_tf_function")
XLA_ATTRIBUTE = "_XlaMustCompile"
# The modules that call `create_new_tf_function` (BODY_FRAME): a loop's body, a branch. Matched by file name.
BODY_MAKERS = ("tensorflow.python.ops.while_v2", "tensorflow.python.ops.cond_v2")
# tf.estimator's implementation modules (TensorFlow <= 2.15): NPURunConfig/NPUEstimator subclass their classes.
ESTIMATOR_MODULES = {name: f"tensorflow_estimator.python.estimator.{name}" for name in ("estimator", "model_fn", "run_config")}
FEEDING_QUEUE_RUNNER = ("tensorflow_estimator.python.estimator.inputs.queues.feeding_queue_runner", "_FeedingQueueRunner")
# Keras 2's (TensorFlow <= 2.15) loss-scale optimizer classes and legacy optimizer base, by module.
KERAS_LOSS_SCALE_MODULE = "keras.src.mixed_precision.loss_scale_optimizer"
KERAS_LEGACY_OPTIMIZER_MODULE = "keras.src.optimizers.legacy.optimizer_v2"
_LAST_WITH_ESTIMATOR = (2, 15)
AUTOGRAPH_CALL = ("tensorflow.python.autograph.impl.api", "converted_call")

_OPERATION = "tensorflow.python.framework.ops"
PRIVATE_SYMBOLS: tuple[PrivateSymbol, ...] = (
    PrivateSymbol(SESSION_MODULE, "BaseSession.__init__", "the one Session patch: profiling and the rank job attach "
                  "when any session is made", "runtime/session/base_session.py"),
    PrivateSymbol(SESSION_MODULE, "BaseSession._make_callable_from_options", "the ring's reads as session callables; "
                  "a profiled session's own callables", "runtime/session/profiler.py"),
    PrivateSymbol(SESSION_MODULE, "BaseSession.__del__", "reads `_session`: a session whose init failed before "
                  "TensorFlow made one sets it to None", "bridge rank session"),
    PrivateSymbol(TRANSFORM_MODULE, "FUNC_GRAPH_TRANSFORMS", "probes go into every traced tf.function graph",
                  "runtime/functions/attach.py"),
    PrivateSymbol(VERSIONS_MODULE, "__version__", "the version while `import tensorflow` still runs",
                  "runtime/functions/attach.py"),
    PrivateSymbol(EAGER_CONTEXT_MODULE, "executing_eagerly", "the host read hooks act on eager calls only",
                  "runtime/functions/host_reads.py"),
    PrivateSymbol(EAGER_CONTEXT_MODULE, "context", "the eager context's ConfigProto and `enable_collective_ops`: "
                  "an eager process joins the ranks' cluster", "bridge ranks eager collectives"),
    PrivateSymbol(EAGER_CONTEXT_MODULE, "Context.enable_collective_ops", "an eager process joins the ranks' cluster",
                  "bridge ranks eager collectives"),
    PrivateSymbol(NEST_MODULE, "is_nested", "`tf.contrib.framework.nest` for --tf1 scripts: TensorFlow's whole "
                  "nest module (`tf.nest` lacks names 1.15 scripts use)", "bridge launch contrib framework"),
    PrivateSymbol(FRAMEWORK_CONFIG_MODULE, "is_op_determinism_enabled", "no stamp kernels that op determinism "
                  "rejects", "runtime/probes.py"),
    *(PrivateSymbol(module, f"{owner}.{method}", "GetNext of batches read eagerly outside the step",
                    "runtime/functions/host_reads.py") for module, owner, method in HOST_READ_METHODS),
    PrivateSymbol(FUNCTION_CALL_METHOD[0], f"{FUNCTION_CALL_METHOD[1]}.{FUNCTION_CALL_METHOD[2]}", "each call of a "
                  "training step: its reads and its end", "runtime/functions/host_reads.py"),
    PrivateSymbol(TRACE_FRAME[0], TRACE_FRAME[1], "its frame holds the traced Python function and its attributes",
                  "runtime/functions/tracing.py"),
    PrivateSymbol(BODY_FRAME[0], BODY_FRAME[1], "its caller tells a while body from a cond branch",
                  "runtime/functions/tracing.py"),
    PrivateSymbol(_OPERATION, "Operation._add_control_input", "a stamp waits on (or gates) an op of a built graph",
                  "runtime/probes.py, bridge iteration loop"),
    PrivateSymbol(_OPERATION, "Operation._add_control_inputs", "a traced step's control edges rewired",
                  "runtime/functions/transform.py"),
    PrivateSymbol(_OPERATION, "Operation._remove_all_control_inputs", "a traced step's control edges rewired",
                  "runtime/functions/transform.py"),
    PrivateSymbol(_OPERATION, "Operation._control_outputs", "the ops a probe must not overtake",
                  "runtime/op_neighbours.py"),
    PrivateSymbol(AUTOGRAPH_CALL[0], AUTOGRAPH_CALL[1], "its frame's local `converted_f` carries `ag_source_map`: the "
                  "user's line of code AutoGraph rewrote (a py_function called in a map function)", "runtime/call_sites.py"),
    PrivateSymbol(_OPERATION, "Graph._unsafe_unfinalize", "probes go into graphs Estimator and MonitoredSession "
                  "finalise before the session exists", "runtime/probes.py"),
    *(PrivateSymbol(module, "", "the file name of the caller of `create_new_tf_function` says which kind of body "
                    "is traced", "runtime/functions/tracing.py") for module in BODY_MAKERS),
    PrivateSymbol(ESTIMATOR_MODULES["estimator"], "Estimator", "NPUEstimator subclasses it",
                  "bridge/npu_bridge/estimator.py", _LAST_WITH_ESTIMATOR),
    PrivateSymbol(ESTIMATOR_MODULES["model_fn"], "EstimatorSpec", "NPUEstimatorSpec subclasses it; ModeKeys",
                  "bridge/npu_bridge/estimator.py", _LAST_WITH_ESTIMATOR),
    PrivateSymbol(ESTIMATOR_MODULES["run_config"], "RunConfig", "NPURunConfig subclasses it",
                  "bridge/npu_bridge/estimator.py", _LAST_WITH_ESTIMATOR),
    PrivateSymbol(ESTIMATOR_MODULES["run_config"], "_USE_DEFAULT", "NPURunConfig's checkpoint arguments default "
                  "as RunConfig's own (every 600 s)", "bridge/npu_bridge/estimator.py", _LAST_WITH_ESTIMATOR),
    PrivateSymbol(FEEDING_QUEUE_RUNNER[0], FEEDING_QUEUE_RUNNER[1], "served as 1.15's "
                  "`tf.contrib.training.FeedingQueueRunner`", "bridge/launch/contrib/feeding_queue_runner.py",
                  _LAST_WITH_ESTIMATOR),
    PrivateSymbol(KERAS_LOSS_SCALE_MODULE, "LossScaleOptimizerMetaclass", "NpuLossScaleOptimizer picks Keras' "
                  "matching class as Keras' metaclass does", "bridge/npu_device/keras_loss_scale.py", _LAST_WITH_ESTIMATOR),
    *(PrivateSymbol(KERAS_LOSS_SCALE_MODULE, name, "NpuLossScaleOptimizer subclasses it",
                    "bridge/npu_device/keras_loss_scale.py", _LAST_WITH_ESTIMATOR)
      for name in ("BaseLossScaleOptimizer", "LossScaleOptimizer", "LossScaleOptimizerV3")),
    PrivateSymbol(KERAS_LEGACY_OPTIMIZER_MODULE, "OptimizerV2", "tells a legacy inner optimizer from a new one",
                  "bridge/npu_device/keras_loss_scale.py", _LAST_WITH_ESTIMATOR),
)


def body_maker(file_name: str) -> str | None:
    """Which of `BODY_MAKERS` a frame's file is (its module's last part: "while_v2", "cond_v2"), None if neither."""
    for module in BODY_MAKERS:
        short = module.rsplit(".", 1)[-1]
        if file_name.startswith(short):
            return short
    return None


def optional_module(module: str) -> Any:
    """A registered module that only some versions ship (`PrivateSymbol.until`); None where it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def run_config_default() -> Any:
    """RunConfig's "not given" marker (`_USE_DEFAULT`): a checkpoint argument left at it gets RunConfig's default."""
    return importlib.import_module(ESTIMATOR_MODULES["run_config"])._USE_DEFAULT


def add_control_input(op: Any, dependency: Any) -> None:
    """`op` runs after `dependency` (an op), in a graph already built."""
    op._add_control_input(dependency)


def replace_control_inputs(op: Any, dependencies: Iterable[Any]) -> None:
    """`op`'s control inputs become exactly `dependencies`."""
    op._remove_all_control_inputs()
    op._add_control_inputs(list(dependencies))


def control_outputs(op: Any) -> list[Any]:
    """The ops that wait on `op` by a control edge."""
    return list(op._control_outputs)


def unfinalize(graph: Any) -> None:
    """Let probes into a graph that Estimator/MonitoredSession finalised before the session exists."""
    graph._unsafe_unfinalize()


def make_callable_from_options(session: Any) -> Any:
    """The session's own bound `_make_callable_from_options` (the callables `Session.make_callable` builds on)."""
    return session._make_callable_from_options


def no_session_made(session: Any) -> None:
    """`session`'s init fails before TensorFlow made its session: `BaseSession.__del__` must find nothing to close."""
    session._session = None


def replace_make_callable_from_options(session: Any, replacement: Any) -> None:
    """`session`'s callables are made by `replacement` from now on (Keras in graph mode runs its steps so)."""
    session._make_callable_from_options = replacement


def eager_context() -> Any:
    """TensorFlow's eager context object (its full ConfigProto, collective set-up)."""
    return importlib.import_module(EAGER_CONTEXT_MODULE).context()


def nest_module() -> Any:
    """TensorFlow's own `nest` module, with every name 1.15's `tf.contrib.framework.nest` had."""
    return importlib.import_module(NEST_MODULE)


def op_determinism_enabled() -> bool:
    """Whether `tf.config.experimental.enable_op_determinism()` is on (False on a TensorFlow without it)."""
    try:
        return bool(importlib.import_module(FRAMEWORK_CONFIG_MODULE).is_op_determinism_enabled())
    except (ImportError, AttributeError):
        return False


def autograph_origin(frame: Any) -> tuple[str, int] | None:
    """The user's (file, line) behind a frame of AutoGraph-generated code (a branch's too), from the source
    map of the converted function that `converted_call` runs: the nearest such call up the stack."""
    caller = frame.f_back
    while caller is not None and caller.f_code.co_name != AUTOGRAPH_CALL[1]:
        caller = caller.f_back
    source_map = getattr(caller.f_locals.get("converted_f"), "ag_source_map", None) if caller is not None else None
    for location, origin in (source_map or {}).items():
        if location.filename == frame.f_code.co_filename and location.lineno == frame.f_lineno:
            return origin.loc.filename, origin.loc.lineno
    return None
