"""`npu-tf-prof run`'s launch context: Ascend's launch variables filled in, and hints after a missing module.

The variables and hints are checked in process on dictionaries and real
`ModuleNotFoundError`s; one small script through the launcher checks that the
script sees them, that the note is printed once, that the hint follows the
traceback, and that `--tf1` without tf-slim says how to get it (a package
folder on PYTHONPATH hides the installed tf_slim) while the areas that do not
need it still work.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from npu_tf_profiling.bridge.launch.import_hints import import_hint
from npu_tf_profiling.bridge.launch.context import LAUNCH_DEFAULTS, fill_launch_defaults

CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")


def test_launch_defaults_fill_only_what_the_user_left_unset() -> None:
    environ: dict[str, str] = {"RANK_ID": "", "PATH": "/bin"}
    assert fill_launch_defaults(environ) == LAUNCH_DEFAULTS  # an empty value counts as unset
    assert environ == {"PATH": "/bin", **LAUNCH_DEFAULTS}
    user = {"ASCEND_DEVICE_ID": "3", "JOB_ID": "7", "RANK_ID": "0 "}
    assert fill_launch_defaults(user) == {"RANK_SIZE": "1", "DEVICE_ID": "3", "DEVICE_INDEX": "0"}  # the device follows
    assert user["JOB_ID"] == "7" and user["ASCEND_DEVICE_ID"] == "3"
    assert fill_launch_defaults(dict(LAUNCH_DEFAULTS)) == {}


@pytest.mark.parametrize("environ", [
    {"RANK_SIZE": "8"},
    {"RANK_TABLE_FILE": "/data/rank_table_8p.json"},
    {"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}})},
])
def test_a_multi_process_launch_is_left_alone(environ: dict[str, str]) -> None:
    """Filling RANK_SIZE=1 or DEVICE_ID=0 there would contradict the ranks or make every worker rank 0."""
    before = dict(environ)
    assert fill_launch_defaults(environ) == {} and environ == before


def _missing(name: str) -> ModuleNotFoundError:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        return exc
    raise AssertionError(f"{name} imported")


def test_import_hint_names_the_parent_folder_that_has_the_module_or_the_requirements(tmp_path: Path) -> None:
    model = tmp_path / "Model_ID0001_for_TensorFlow"
    (model / "src" / "nets").mkdir(parents=True)
    (model / "common_utils").mkdir()
    script = model / "src" / "nets" / "train.py"
    script.write_text("")
    (model / "requirements.txt").write_text("scipy\n")
    own = import_hint(_missing("common_utils.io"), str(script))
    assert own is not None and f"'common_utils' is in {model}, a parent folder" in own and f"PYTHONPATH={model}" in own
    third_party = import_hint(_missing("no_such_package_npu25"), str(script))
    assert third_party is not None and f"{model / 'requirements.txt'}" in third_party and "pip install -r" in third_party
    assert import_hint(_missing("json.no_such_sub_module"), str(script)) is None  # installed package: its own message
    assert import_hint(ValueError("x"), str(script)) is None
    (model / "requirements.txt").unlink()
    assert import_hint(_missing("no_such_package_npu25"), str(script)) is None


PROBE = """\
import json, os, sys
import tensorflow as tf
from tensorflow.contrib import data as contrib_data
from tensorflow_core.python.framework import graph_util
rank_size = int(os.environ["RANK_SIZE"])
print(json.dumps({"env": {k: os.environ[k] for k in ("RANK_SIZE", "RANK_ID", "DEVICE_ID", "ASCEND_DEVICE_ID", "JOB_ID", "DEVICE_INDEX")},
                  "contrib_in_sys_modules": any(n.startswith("tensorflow.contrib") for n in sys.modules),
                  "freeze": callable(graph_util.convert_variables_to_constants),
                  "hparams": tf.contrib.training.HParams(lr=0.1).parse("lr=2").lr,
                  "autotune": contrib_data.AUTOTUNE == tf.data.experimental.AUTOTUNE}))
try:
    from tensorflow.contrib import slim
except ImportError as exc:
    print(exc)
import model_helpers
"""


def test_tf1_without_tf_slim_says_how_to_get_it_and_the_launch_context_is_given(tmp_path: Path) -> None:
    hidden = tmp_path / "hide" / "tf_slim"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ModuleNotFoundError('No module named tf_slim', name='tf_slim')\n")
    model = tmp_path / "model"
    (model / "src").mkdir(parents=True)
    (model / "model_helpers.py").write_text("")
    (model / "src" / "probe.py").write_text(textwrap.dedent(PROBE))
    environ = {k: v for k, v in os.environ.items() if k not in LAUNCH_DEFAULTS and not k.startswith("PROFILING_")}
    environ.update(TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=str(tmp_path / "hide"), DEVICE_ID="2")
    done = subprocess.run([CONSOLE_SCRIPT, "run", "--tf1", str(model / "src" / "probe.py")], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=180)
    lines = done.stdout.strip().splitlines()
    assert json.loads(lines[0]) == {"env": {"RANK_SIZE": "1", "RANK_ID": "0", "DEVICE_ID": "2", "ASCEND_DEVICE_ID": "2",
                                            "JOB_ID": "10087", "DEVICE_INDEX": "0"},
                                    "contrib_in_sys_modules": False, "freeze": True, "hparams": 2.0, "autotune": True}
    assert lines[1].startswith("tf.contrib.slim is served from the tf-slim package, which is not installed")
    assert "pip install 'npu_tf_profiling[tf1]'" in lines[1]
    assert done.returncode == 1
    assert done.stderr.count("npu-tf-prof run: set RANK_SIZE=1 RANK_ID=0 ASCEND_DEVICE_ID=2 JOB_ID=10087 DEVICE_INDEX=0, as") == 1
    assert "ModuleNotFoundError: No module named 'model_helpers'" in done.stderr
    assert done.stderr.rstrip().splitlines()[-1].startswith(f"npu-tf-prof run: hint: 'model_helpers' is in {model}")
