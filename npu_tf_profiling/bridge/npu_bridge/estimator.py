"""The Estimator-side surface of npu_bridge: NPURunConfig, NPUEstimator and helpers.

`NPURunConfig` writes the profiling request into its `session_config` as the
`NpuOptimizer` custom optimizer, exactly as upstream does. Every session the
Estimator creates carries it, and the Session integration (installed by importing
this package) attaches profiling there; so even a plain
`tf.estimator.Estimator(config=NPURunConfig(...))` is profiled.

TensorFlow 2.16+ has no `tf.estimator`. The package still imports there; the
Estimator-only names below raise `EstimatorUnavailableError` when used.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2

from npu_tf_profiling.config.errors import EstimatorUnavailableError
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.config.profiling_config import ProfilingConfig
from npu_tf_profiling.bridge.npu_bridge.hooks import npu_hooks_append
from npu_tf_profiling.bridge.ranks.discovery import tf_config_hidden_from_run_config
from npu_tf_profiling.bridge.npu_bridge.session_config import npu_config_proto
from npu_tf_profiling.raw_format.call_sites import RUN_CONFIG
from npu_tf_profiling.runtime import call_sites
from npu_tf_profiling.runtime import tf_private

try:  # tf.estimator exists up to TensorFlow 2.15.
    _estimator_lib, _model_fn_lib, _run_config_lib = (importlib.import_module(tf_private.ESTIMATOR_MODULES[name])
                                                      for name in ("estimator", "model_fn", "run_config"))
    _ESTIMATOR_ERROR: str | None = None
except ImportError as _exc:  # pragma: no cover - exercised by `make check-latest`
    _ESTIMATOR_ERROR = (
        f"tf.estimator is not available in TensorFlow {tf.__version__} ({_exc}); NPURunConfig, NPUEstimator, "
        "NPUEstimatorSpec and npu_run_config_init need TensorFlow <= 2.15 with tensorflow-estimator "
        "(pip install 'tensorflow==2.15.1'). The sess.run (NpuOptimizer) and PROFILING_MODE paths work on this version."
    )

# npu_bridge knobs that tune Ascend hardware; accepted so scripts run unchanged, and
# reported once because they change nothing on CPU/GPU.
NPU_ONLY_KNOBS = (
    "enable_data_pre_proc",
    "precision_mode",
    "enable_reduce_precision",
    "variable_format_optimize",
    "mix_compile_mode",
    "hcom_parallel",
    "graph_memory_max_size",
    "variable_memory_max_size",
    "auto_tune_mode",
    "dump_config",
    "stream_max_parallel_num",
    "is_tailing_optimization",
    "horovod_mode",
    "graph_run_mode",
    "op_debug_level",
    "enable_scope_fusion_passes",
    "enable_exception_dump",
    "op_select_implmode",
    "optypelist_for_implmode",
    "dynamic_input_config",
    "mstune_mode",
    "work_path",
    "buffer_optimize",
    "enable_small_channel",
    "fusion_switch_file",
    "enable_compress_weight",
    "compress_weight_conf",
    "op_compiler_cache_mode",
    "op_compiler_cache_dir",
    "debug_dir",
    "hcom_multi_mode",
    "dynamic_input",
    "dynamic_graph_execute_mode",
    "dynamic_inputs_shape_range",
    "local_rank_id",
    "local_device_list",
    "session_device_id",
    "distribute_config",
    "modify_mixlist",
    "op_precision_mode",
    "device_type",
    "soc_config",
    "hccl_timeout",
    "op_wait_timeout",
    "op_execute_timeout",
    "HCCL_algorithm",
    "customize_dtypes",
    "op_debug_config",
    "memory_config",
    "experimental_config",
    "jit_compile",
    "topo_sorting_mode",
    "aoe_config_file",
    "insert_op_file",
    "stream_sync_timeout",
    "event_sync_timeout",
    "external_weight",
    "es_cluster_config",
    "deterministic",
    "frozen_variable",
    "variable_placement",
    "precision_mode_v2",
)


def _copy_of(session_config: config_pb2.ConfigProto | None) -> config_pb2.ConfigProto:
    """The caller's ConfigProto is left as it was (npu_config_proto changes its argument, as upstream's does)."""
    config = config_pb2.ConfigProto()
    if session_config is not None:
        config.CopyFrom(session_config)
    return config


def _require_estimator(what: str) -> None:
    if _ESTIMATOR_ERROR is not None:
        raise EstimatorUnavailableError(f"{what}: {_ESTIMATOR_ERROR}")


if _ESTIMATOR_ERROR is None:

    class NPURunConfig(_run_config_lib.RunConfig):
        """`tf.estimator.RunConfig` with upstream npu_bridge's profiling-related arguments.

        Checkpoint defaults are RunConfig's own (every 600 s), so evaluation after
        training finds a checkpoint as it would with a plain RunConfig.
        """

        def __init__(
            self,
            iterations_per_loop: int = 1,
            profiling_config: ProfilingConfig | None = None,
            model_dir: str | None = None,
            tf_random_seed: int | None = None,
            save_summary_steps: int = 0,
            save_checkpoints_steps: Any = tf_private.run_config_default(),
            save_checkpoints_secs: Any = tf_private.run_config_default(),
            session_config: config_pb2.ConfigProto | None = None,
            keep_checkpoint_max: int = 5,
            keep_checkpoint_every_n_hours: int = 10000,
            log_step_count_steps: int = 100,
            train_distribute: Any = None,
            eval_distribute: Any = None,
            device_fn: Any = None,
            protocol: Any = None,
            experimental_max_worker_delay_secs: int | None = None,
            session_creation_timeout_secs: int = 7200,
            checkpoint_save_graph_def: bool = True,
            **npu_only_knobs: Any,
        ) -> None:
            unknown = sorted(set(npu_only_knobs) - set(NPU_ONLY_KNOBS))
            if unknown:
                raise TypeError(f"NPURunConfig got unexpected keyword argument(s): {', '.join(unknown)}")
            if npu_only_knobs:
                warn_user("NPURunConfig: " + ", ".join(sorted(npu_only_knobs)) + " accepted, no effect on CPU/GPU TensorFlow")
            if not isinstance(iterations_per_loop, int) or isinstance(iterations_per_loop, bool) or iterations_per_loop < 1:
                raise ValueError(f"NPURunConfig: iterations_per_loop must be a positive int, got {iterations_per_loop!r}")
            if iterations_per_loop > 1:
                warn_user(
                    f"NPURunConfig: iterations_per_loop={iterations_per_loop} accepted, no effect on CPU/GPU TensorFlow: "
                    "each session.run is one iteration (the step trace has one row per step)"
                )
            if profiling_config is not None and not isinstance(profiling_config, ProfilingConfig):
                raise TypeError(f"NPURunConfig: profiling_config must be a ProfilingConfig, got {type(profiling_config).__name__}")
            self.iterations_per_loop = iterations_per_loop
            call_sites.note_caller(RUN_CONFIG, {"iterations_per_loop": iterations_per_loop})  # advise names this line
            self._profiling_config = profiling_config
            with tf_config_hidden_from_run_config():  # an Ascend rank is its own chief (see bridge.ranks.discovery)
                super().__init__(
                    model_dir=model_dir,
                    tf_random_seed=tf_random_seed,
                    save_summary_steps=save_summary_steps,
                    save_checkpoints_steps=save_checkpoints_steps,
                    save_checkpoints_secs=save_checkpoints_secs,
                    session_config=npu_config_proto(_copy_of(session_config), profiling_config),
                    keep_checkpoint_max=keep_checkpoint_max,
                    keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
                    log_step_count_steps=log_step_count_steps,
                    train_distribute=train_distribute,
                    eval_distribute=eval_distribute,
                    device_fn=device_fn,
                    protocol=protocol,
                    experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
                    session_creation_timeout_secs=session_creation_timeout_secs,
                    checkpoint_save_graph_def=checkpoint_save_graph_def,
                )

        @property
        def profiling_config(self) -> ProfilingConfig | None:
            return self._profiling_config

    class NPUEstimator(_estimator_lib.Estimator):
        """npu_bridge-style Estimator: a tf.estimator.Estimator whose sessions carry the NpuOptimizer entry."""

        def __init__(self, model_fn: Any, model_dir: str | None = None, config: Any = None, params: Any = None,
                     job_start_file: str = "", warm_start_from: Any = None) -> None:
            if config is None:
                config = NPURunConfig(model_dir=model_dir)
            elif not isinstance(config, NPURunConfig):
                config = npu_run_config_init(config)
            super().__init__(model_fn=_with_broadcast_hook(model_fn), model_dir=model_dir, config=config, params=params,
                             warm_start_from=warm_start_from)

    def _with_broadcast_hook(model_fn: Any) -> Any:
        """The model_fn, whose TRAIN spec also broadcasts rank 0's initial variables when there are several ranks.

        Upstream's NPUEstimator adds this hook itself, so Ascend Estimator scripts do not;
        Estimator forbids overriding `train`, so the hook goes in through the spec. The
        wrapper shows Estimator the model_fn's own signature, so Estimator passes (by
        keyword) exactly what it would pass the model_fn.
        """

        def model_fn_with_hook(**kwargs: Any) -> Any:
            spec = model_fn(**kwargs)
            if getattr(spec, "mode", None) != _model_fn_lib.ModeKeys.TRAIN:
                return spec
            hooks = npu_hooks_append(list(spec.training_hooks))
            return spec if len(hooks) == len(spec.training_hooks) else spec._replace(training_hooks=tuple(hooks))

        model_fn_with_hook.__signature__ = inspect.signature(model_fn)  # type: ignore[attr-defined]
        return model_fn_with_hook

    class NPUEstimatorSpec(_model_fn_lib.EstimatorSpec):
        """Upstream's EstimatorSpec subclass; nothing Ascend-specific is needed on CPU/GPU."""

    def npu_run_config_init(run_config: Any = None) -> Any:
        """A RunConfig whose session_config carries the NpuOptimizer entry (profiling then follows the env vars)."""
        run_config = run_config if run_config is not None else _run_config_lib.RunConfig()
        return run_config.replace(session_config=npu_config_proto(run_config.session_config))

else:  # pragma: no cover - exercised by `make check-latest`

    class _Unavailable:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            _require_estimator(type(self).__name__)

    class NPURunConfig(_Unavailable):  # type: ignore[no-redef]
        """Unavailable: this TensorFlow has no tf.estimator."""

    class NPUEstimator(_Unavailable):  # type: ignore[no-redef]
        """Unavailable: this TensorFlow has no tf.estimator."""

    class NPUEstimatorSpec(_Unavailable):  # type: ignore[no-redef]
        """Unavailable: this TensorFlow has no tf.estimator."""

    def npu_run_config_init(run_config: Any = None) -> Any:  # type: ignore[misc]
        _require_estimator("npu_run_config_init")
