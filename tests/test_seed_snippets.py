"""The Estimator and sess.run snippets of seeds/002 run with only the import line changed.

Two things are adapted, and only these: the import line, and the output folder
(`/home/HwHiAiUser/output` is redirected to the test's tmp dir so tests do not
write outside it). The model around the snippet is ours; the snippet is verbatim.
The options must be resolved from the session that TensorFlow actually creates,
so we read them back from the info.json that session's profiling wrote.
"""
from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers.trace_files import only_prof_dir

SEED_OUTPUT = "/home/HwHiAiUser/output"

ESTIMATOR_SNIPPET_1 = """
from npu_tf_profiling.npu_init import *

# enable_profiling：是否开启profiling采集
profiling_options = '{"output":"/home/HwHiAiUser/output","task_trace":"on"}'
profiling_config = ProfilingConfig(enable_profiling=True, profiling_options= profiling_options)
session_config=tf.ConfigProto()

config = NPURunConfig(profiling_config=profiling_config, session_config=session_config)
"""

ESTIMATOR_SNIPPET_2 = """
from npu_tf_profiling.npu_init import *

profiling_options = '{"output":"/home/HwHiAiUser/output","task_trace":"on","training_trace":"on","aicpu":"on","fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"}'
profiling_config = ProfilingConfig(enable_profiling=True, profiling_options= profiling_options)
session_config=tf.ConfigProto()

config = NPURunConfig(profiling_config=profiling_config, session_config=session_config)
"""

SESS_RUN_SNIPPET_1 = """
custom_op =  config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name =  "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["profiling_mode"].b = True
custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes('{"output":"/home/HwHiAiUser/output","task_trace":"on"}')
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
"""

SESS_RUN_SNIPPET_2 = """
custom_op =  config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name =  "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["profiling_mode"].b = True
custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes('{"output":"/home/HwHiAiUser/output","task_trace":"on","training_trace":"on","aicpu":"on","fp_point":"","bp_point":"","aic_metrics":"PipeUtilization"}')
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF
"""


def _options_in_snippet(snippet: str) -> dict:
    start = snippet.index("'{") + 1
    return json.loads(snippet[start : snippet.index("}'", start) + 1])


def _info(output) -> dict:
    return json.loads(next(only_prof_dir(output).glob("device_*/info.json")).read_text())


@pytest.mark.parametrize("snippet", [ESTIMATOR_SNIPPET_1, ESTIMATOR_SNIPPET_2], ids=["task_trace", "training_trace"])
def test_estimator_snippet(tmp_path, snippet) -> None:
    namespace: dict = {}
    exec(snippet.replace(SEED_OUTPUT, str(tmp_path)), namespace)
    from tests.helpers.models import input_fn, mlp_model_fn

    config = namespace["config"].replace(model_dir=str(tmp_path / "model"), log_step_count_steps=None)
    estimator = namespace["NPUEstimator"](model_fn=mlp_model_fn, config=config)
    estimator.train(input_fn=input_fn(), steps=5)
    info = _info(tmp_path)
    wanted = _options_in_snippet(snippet)
    wanted["output"] = str(tmp_path)
    assert info["options"] == wanted and info["source"] == "session"
    rows = list(only_prof_dir(tmp_path).glob("mindstudio_profiler_output/step_trace_*.csv"))
    if wanted.get("training_trace") == "on":
        assert len(rows) == 1 and len(rows[0].read_text().strip().splitlines()) == 1 + 5
        assert set(info["not_collected"]) >= {"aic_metrics"}
    else:
        assert not rows  # task_trace only: no iteration trace was asked for


@pytest.mark.parametrize("snippet", [SESS_RUN_SNIPPET_1, SESS_RUN_SNIPPET_2], ids=["task_trace", "training_trace"])
def test_sess_run_snippet(tmp_path, snippet) -> None:
    program = textwrap.dedent(
        """
        from npu_tf_profiling.npu_init import *
        tf.disable_eager_execution()
        from tests.helpers.models import session_mlp
        graph = tf.get_default_graph()
        train_op, loss, init, _ = session_mlp(graph)
        config = tf.ConfigProto()
        """
    ) + snippet.replace(SEED_OUTPUT, str(tmp_path)) + textwrap.dedent(
        """
        with tf.Session(config=config) as sess:
          sess.run(init)
          for _ in range(4):
            sess.run(train_op)
        """
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=180, cwd=str(__import__("pathlib").Path(__file__).parent.parent))
    assert done.returncode == 0, done.stderr
    info = _info(tmp_path)
    wanted = _options_in_snippet(snippet)
    wanted["output"] = str(tmp_path)
    assert info["options"] == wanted and info["source"] == "session"
    csvs = list(only_prof_dir(tmp_path).glob("mindstudio_profiler_output/step_trace_*.csv"))
    assert len(csvs) == (1 if wanted.get("training_trace") == "on" else 0)
