"""`npu-tf-prof run [--tf1] SCRIPT ARGS`: the script runs as `python SCRIPT ARGS` would, with npu_bridge aliased.

Each check runs the same script both ways (plain `python` and the launcher) and
compares what the script saw and printed, its exit code and its traceback.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from npu_tf_profiling import install_npu_bridge_alias
from npu_tf_profiling.bridge.alias import COMPAT_ROOT
from npu_tf_profiling.bridge.launch.context import LAUNCH_DEFAULTS

CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")

REPORT_SCRIPT = """\
import json, os, sys
import __main__
def main():
    report = {"argv": sys.argv, "name": __name__, "main_is_me": __main__.__dict__ is globals(),
              "cwd": os.getcwd(), "path0": sys.path[0], "file": __file__}
    print(json.dumps(report))
    if "--fail" in sys.argv:
        helper()
    sys.exit(int(sys.argv[1]))
def helper():
    raise ValueError("boom from the script")
if __name__ == "__main__":
    main()
"""


def _environ(**extra: str) -> dict[str, str]:
    """The test's environment, with the launch variables set (so `run` adds nothing and says nothing)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ.update(LAUNCH_DEFAULTS, TF_CPP_MIN_LOG_LEVEL="2")
    environ.update(extra)
    return environ


def _run(command: list[str], cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=_environ(**extra), capture_output=True, text=True, timeout=180)


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    folder = tmp_path / "scripts"
    folder.mkdir()
    path = folder / "report.py"
    path.write_text(REPORT_SCRIPT)
    (tmp_path / "work").mkdir()
    return path


@pytest.mark.parametrize("launcher", [[CONSOLE_SCRIPT, "run"], [sys.executable, "-m", "npu_tf_profiling", "run"]])
def test_script_sees_what_python_gives_it(script: Path, launcher: list[str]) -> None:
    args = [str(script), "3", "--lr", "0.1", "--tf1", "-h"]  # options after SCRIPT belong to the script
    plain = _run([sys.executable, *args], script.parent.parent / "work")
    launched = _run([*launcher, *args], script.parent.parent / "work")
    assert plain.returncode == launched.returncode == 3, launched.stderr
    assert json.loads(launched.stdout) == json.loads(plain.stdout)
    report = json.loads(launched.stdout)
    assert report["argv"] == args and report["name"] == "__main__" and report["main_is_me"]
    assert report["cwd"] == str(script.parent.parent / "work") and report["path0"] == str(script.parent)


def test_uncaught_exception_prints_the_scripts_own_traceback(script: Path) -> None:
    args = [str(script), "0", "--fail"]
    plain = _run([sys.executable, *args], script.parent)
    launched = _run([CONSOLE_SCRIPT, "run", *args], script.parent)
    assert plain.returncode == launched.returncode == 1
    assert launched.stderr == plain.stderr
    assert 'in helper\n    raise ValueError("boom from the script")' in launched.stderr
    assert "runpy" not in launched.stderr and "launcher" not in launched.stderr


def test_sys_exit_with_a_message_and_a_missing_script(tmp_path: Path) -> None:
    path = tmp_path / "bye.py"
    path.write_text("import sys\nsys.exit('bye: bad flag')\n")
    launched = _run([CONSOLE_SCRIPT, "run", str(path)], tmp_path)
    assert launched.returncode == 1 and launched.stderr == "bye: bad flag\n"
    missing = _run([CONSOLE_SCRIPT, "run", str(tmp_path / "nope.py")], tmp_path)
    assert missing.returncode == 2 and "can't open file" in missing.stderr and "nope.py" in missing.stderr


def test_npu_bridge_and_hccl_resolve_to_the_compatibility_layer(tmp_path: Path) -> None:
    path = tmp_path / "imports.py"
    path.write_text("import npu_bridge, hccl.manage.api\nprint(npu_bridge.__file__)\nprint(hccl.manage.api.__file__)\n")
    launched = _run([CONSOLE_SCRIPT, "run", str(path)], tmp_path)
    assert launched.returncode == 0, launched.stderr
    files = launched.stdout.split()
    assert files[0].endswith("npu_tf_profiling/bridge/compat/npu_bridge/__init__.py")
    assert files[1].endswith("npu_tf_profiling/bridge/compat/hccl/manage/api.py")
    plain = _run([sys.executable, str(path)], tmp_path)
    assert plain.returncode == 1 and "No module named 'npu_bridge'" in plain.stderr  # nothing leaks into plain python


def test_a_real_npu_bridge_is_never_shadowed(tmp_path: Path) -> None:
    real = tmp_path / "site" / "npu_bridge"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    (real / "npu_init.py").write_text("from npu_bridge import REAL\n")
    path = tmp_path / "imports.py"
    path.write_text(textwrap.dedent("""\
        import npu_bridge.npu_init, npu_tf_profiling
        print(npu_bridge.__file__, npu_bridge.npu_init.REAL, npu_tf_profiling.install_npu_bridge_alias())
        try:
            import hccl
        except ImportError:
            print("no hccl")
    """))
    launched = _run([CONSOLE_SCRIPT, "run", str(path)], tmp_path, PYTHONPATH=str(tmp_path / "site"))
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout.split("\n")[:2] == [f"{real / '__init__.py'} True ()", "no hccl"]


def test_install_alias_is_idempotent_and_public() -> None:
    saved = list(sys.path)
    try:
        first = install_npu_bridge_alias()
        assert first == install_npu_bridge_alias() == ("npu_bridge", "npu_device", "hccl", "npu_convert_dropout")
        assert sys.path.count(COMPAT_ROOT) == 1 and sys.path[-1] == COMPAT_ROOT  # last: anything real wins
    finally:
        sys.path[:] = saved


TF1_SCRIPT = """\
import sys
import tensorflow as tf
from tensorflow import placeholder
import tensorflow.compat.v1 as v1
real = sys.modules["tensorflow"]
tf_before_star = tf
from npu_bridge.npu_init import *
print(tf.Session is v1.Session, placeholder is v1.placeholder, tf.executing_eagerly(), hasattr(real, "Session"),
      tf is tf_before_star)
x = tf.placeholder(tf.float32, [2])
with tf.Session() as sess:
    print(sess.run(x * 2, feed_dict={x: [1.0, 2.0]}).tolist())
print(tf.contrib.layers.xavier_initializer.__module__)
try:
    tf.contrib.tpu.CrossShardOptimizer
except AttributeError as exc:
    print(exc)
from tensorflow.contrib.tpu.python.tpu import keras_support
"""


def test_tf1_gives_user_code_the_v1_api_contrib_and_names_what_replaces_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "tf1.py"
    path.write_text(TF1_SCRIPT)
    launched = _run([CONSOLE_SCRIPT, "run", "--tf1", str(path)], tmp_path)
    lines = launched.stdout.splitlines()
    assert lines[0] == "True True False False True"  # library code (sys.modules) keeps TensorFlow 2's own module
    assert lines[1] == "[2.0, 4.0]"
    assert lines[2] == "tf_slim.layers.initializers"  # served from tf-slim
    assert lines[3].startswith("tf.contrib.tpu.CrossShardOptimizer: not in TensorFlow 2") and "NPURunConfig" in lines[3]
    assert launched.returncode == 1
    assert "ImportError: tf.contrib.tpu.python.tpu.keras_support: not in TensorFlow 2" in launched.stderr
    without = _run([CONSOLE_SCRIPT, "run", str(path)], tmp_path)
    assert without.returncode == 1 and "cannot import name 'placeholder' from 'tensorflow'" in without.stderr


def test_tf1_leaves_this_packages_own_modules_on_tensorflow_2_when_run_from_a_checkout(tmp_path: Path) -> None:
    path = tmp_path / "probe_module.py"
    path.write_text("import sys, tensorflow as tf\nimport npu_tf_profiling.runtime.probes as probes\n"
                    "print(probes.tf is sys.modules['tensorflow'], tf is not probes.tf)\n")
    checkout = str(Path(__file__).resolve().parents[1])
    launched = _run([sys.executable, "-m", "npu_tf_profiling", "run", "--tf1", str(path)], tmp_path, PYTHONPATH=checkout)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout.split() == ["True", "True"]


def test_a_run_that_trains_nothing_says_nothing_was_profiled(tmp_path: Path) -> None:
    """An Estimator whose checkpoint is already at max_steps trains nothing: `run` says so at exit, as `python` does."""
    path = tmp_path / "no_training.py"
    path.write_text("import tensorflow as tf\nprint(tf.constant(1.0).shape)\n")
    launched = _run([CONSOLE_SCRIPT, "run", str(path)], tmp_path, PROFILING_MODE="true",
                    PROFILING_OPTIONS=json.dumps({"output": str(tmp_path / "prof"), "training_trace": "on"}))
    assert launched.returncode == 0, launched.stderr
    assert "PROFILING_MODE=true, but no training step ran" in launched.stderr
    assert launched.stderr.count("no training step ran") == 1  # once, with or without the start-up hook
