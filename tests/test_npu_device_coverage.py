"""Every npu_device entry that 5 or more public ModelZoo TF2 files use resolves and runs under `npu-tf-prof run`.

`/work/shared/npu_device_usage.json` (copied to tests/data/npu_device_usage.json) counts what 167 files in 74
ModelZoo-TensorFlow `TensorFlow2/` folders import and use. Each entry below has the statement a script
would run; they run in one launched script (the alias as scripts get it), each on its own. Entries used
by fewer than 5 files run too, and docs/npu_device_surface.md must list every entry.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CENSUS = json.loads((Path(__file__).parent / "data" / "npu_device_usage.json").read_text())
DOC = Path(__file__).parent.parent / "docs" / "npu_device_surface.md"
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")
MIN_FILES = 5

# census entry -> the statements a script runs for it (`npu_device` imported as in the scripts)
CHECKS: dict[str, str] = {
    "import npu_device": "import npu_device",
    "import npu_device as npu": "import npu_device as npu",
    "from npu_device import gen_npu_ops": "from npu_device import gen_npu_ops",
    "from npu_device.compat.v1.npu_init import *": "exec('from npu_device.compat.v1.npu_init import *', {}); "
                                                  "from npu_device.compat.v1.npu_init import NPURunConfig, ProfilingConfig",
    "import npu_convert_dropout": "import npu_convert_dropout",
    "local npu_ops (vendored, calls gen_npu_ops)": "from npu_device import gen_npu_ops as g; "
                                                   "g.drop_out_do_mask(tf.ones([4]), g.drop_out_gen_mask([4], 0.5, 1, 2), 0.5)",
    "npu_device.open().as_default()": "h = npu_device.open().as_default(); assert npu_device.npu_device.global_npu_ctx() is h",
    "global_options().precision_mode": "npu_device.global_options().precision_mode = 'allow_mix_precision'",
    "global_options().dump_config.{enable_dump,dump_path,dump_step,dump_mode,enable_dump_debug,dump_debug_mode}":
        "d = npu_device.global_options().dump_config; d.enable_dump = True; d.dump_path = '/tmp/d'; d.dump_step = '0|5'; "
        "d.dump_mode = 'all'; d.enable_dump_debug = True; d.dump_debug_mode = 'all'",
    "global_options().profiling_config.{enable_profiling,profiling_options}":
        "p = npu_device.global_options().profiling_config; p.enable_profiling = False; "
        "p.profiling_options = '{\"output\":\"/tmp\",\"training_trace\":\"on\"}'",
    "global_options().modify_mixlist": "npu_device.global_options().modify_mixlist = './ops_info.json'",
    "global_options().fusion_switch_file": "npu_device.global_options().fusion_switch_file = './fusion_switch.cfg'",
    "global_options().auto_tune_mode": "npu_device.global_options().auto_tune_mode = 'RL,GA'",
    "global_options().graph_memory_max_size / variable_memory_max_size":
        "npu_device.global_options().graph_memory_max_size = str(25 * 1024 ** 3); "
        "npu_device.global_options().variable_memory_max_size = str(6 * 1024 ** 3)",
    "global_options().hcom_parallel": "npu_device.global_options().hcom_parallel = True",
    "global_options().op_compiler_cache_mode / op_compiler_cache_dir / is_tailing_optimization / experimental.multi_branches_config.*":
        "o = npu_device.global_options(); o.op_compiler_cache_mode = 'enable'; o.op_compiler_cache_dir = '/tmp/c'; "
        "o.is_tailing_optimization = True; o.experimental.multi_branches_config.input_shape = 'data:-1,8'; "
        "o.experimental.multi_branches_config.dynamic_node_type = '0'; o.experimental.multi_branches_config.dynamic_dims = '1;2'",
    "npu_device.distribute.broadcast": "v = tf.Variable([1.0]); npu_device.distribute.broadcast([v], root_rank=0); assert v.numpy() == 1.0",
    "npu_device.distribute.npu_distributed_keras_optimizer_wrapper":
        "o = tf.keras.optimizers.SGD(); assert npu_device.distribute.npu_distributed_keras_optimizer_wrapper(o) is o",
    "npu_device.distribute.shard_and_rebatch_dataset":
        "d = tf.data.Dataset.range(8); assert npu_device.distribute.shard_and_rebatch_dataset(d, 4) == (d, 4)",
    "npu_device.distribute.all_reduce": "t = tf.ones([2]); assert npu_device.distribute.all_reduce(t, 'mean') is t",
    "npu_device.compat.enable_v1()": "assert callable(npu_device.compat.enable_v1)",  # run in test_npu_device_surface
    "npu_device.train.optimizer.NpuLossScaleOptimizer":
        "o = npu_device.train.optimizer.NpuLossScaleOptimizer(tf.keras.optimizers.Adam(), dynamic=True); o.last_step_finite",
    "hasattr(npu_device.ops, 'gelu') / npu_device.ops.*": "assert hasattr(npu_device.ops, 'gelu'); npu_device.ops.gelu(tf.ones([2]))",
    "npu_device.npu_device.global_npu_ctx": "npu_device.npu_device.global_npu_ctx()",
    "hccl.split.api.set_split_strategy_*":
        "from hccl.split.api import set_split_strategy_by_idx, set_split_strategy_by_size; set_split_strategy_by_idx([20, 40])",
}

PROBE = """\
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
import npu_device
results = {}
for entry, code in json.loads(sys.argv[1]).items():
    try:
        exec(code, {"tf": tf, "npu_device": npu_device})
        results[entry] = "ok"
    except Exception as exc:
        results[entry] = f"{type(exc).__name__}: {exc}"
print(json.dumps(results))
"""


def census_entries() -> dict[str, int]:
    """Every census entry with its file count."""
    entries = dict(CENSUS["imports"])
    entries.update({key: files for key, (files, _folders) in CENSUS["uses_files_folders"].items()})
    return entries


def test_the_census_is_the_shared_one() -> None:
    assert CENSUS["imports"]["import npu_device"] == 103 and len(census_entries()) == 25


def test_every_census_entry_runs_and_the_rest_are_documented(tmp_path: Path) -> None:
    entries = census_entries()
    assert set(CHECKS) == set(entries)  # a new census entry needs its check
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = subprocess.run([CONSOLE_SCRIPT, "run", str(probe), json.dumps(CHECKS)], capture_output=True, text=True,
                          timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    failing = {entry: results[entry] for entry, files in entries.items() if files >= MIN_FILES and results[entry] != "ok"}
    assert failing == {}
    doc = DOC.read_text()
    undocumented = [entry for entry in entries if f"`{entry}`" not in doc]
    assert undocumented == [], "docs/npu_device_surface.md should list each census entry verbatim in backticks"
    assert [entry for entry, result in results.items() if result != "ok"] == []  # the rarer ones run too
