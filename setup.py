"""Packaging for npu_tf_profiling.

TensorFlow itself is not an install requirement: users bring their own build
(`tensorflow`, `tensorflow-cpu`, a GPU build), and pip would otherwise pull a
second, conflicting distribution. The pinned test environment is in
constraints.txt.

The `tf1` extra is tf-slim, which `npu-tf-prof run --tf1` serves as
`tf.contrib.slim` / `tf.contrib.layers` / `tf.contrib.framework` (and contrib's
losses and metrics) to TensorFlow 1.15 scripts; without it those areas raise
an error saying to install the extra, and everything else works.
"""
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

AUTOSTART_PTH = "npu_tf_profiling_autostart.pth"


class BuildPyWithStartupHook(build_py):
    """Also ship the start-up hook (.pth) at the top of site-packages.

    The hook lets an unmodified script be profiled through PROFILING_MODE /
    PROFILING_OPTIONS alone, as upstream does; it costs one env lookup when
    the variables are unset.
    """

    def run(self) -> None:
        super().run()
        self.copy_file(AUTOSTART_PTH, str(Path(self.build_lib) / AUTOSTART_PTH))


setup(
    name="npu_tf_profiling",
    version="0.1.0",
    description="Ascend npu_bridge-style profiling (step trace, task trace) for TensorFlow graph-mode training on CPU/GPU",
    python_requires=">=3.9",
    packages=find_packages(include=["npu_tf_profiling", "npu_tf_profiling.*"]),
    install_requires=["numpy", "pandas>=1.5", "protobuf>=3.20", "psutil>=5.7"],  # psutil: host_sys's one-off facts; its counters where there is no /proc
    # Optional: `npu-tf-prof view` draws with plotly; `npu-tf-prof tensorboard` (and the "tensorboard" option)
    # write event files with TensorBoard's own record writer and protobufs. A TensorFlow install already has tensorboard.
    # `--tf1` serves tf.contrib's slim/layers/framework from tf-slim.
    # `npu-tf-prof cluster` runs its per-rank work as Dask tasks (in-process, or on a cluster with --scheduler).
    # `fast`: the msprof databases ingested from Arrow batches by the ADBC SQLite driver (without it: row by row, same content).
    extras_require={"view": ["plotly>=5.0"], "cluster": ["dask>=2024.1.0", "distributed>=2024.1.0"], "tensorboard": ["tensorboard>=2.4"], "tf1": ["tf-slim==1.1.0"],
                    "fast": ["pyarrow>=14", "adbc-driver-sqlite>=1.0", "adbc-driver-manager>=1.0"]},
    cmdclass={"build_py": BuildPyWithStartupHook},
    entry_points={"console_scripts": ["npu-tf-prof=npu_tf_profiling.cli:main"]},
)
