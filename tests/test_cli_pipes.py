"""`npu-tf-prof ... | head`: a reader that closes the pipe early ends every sub-command quietly (exit 141).

Each command runs in a child whose stdout is a pipe the test has already
closed, so its first write fails with EPIPE, as under `| head` on a long output.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.exit_codes import EXIT_BROKEN_PIPE
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from tests.helpers import graphs_for_tests as graphs
from tests.helpers.raw_fixtures import iterations, make_prof_dir

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pipes")
    prof = make_prof_dir(root / "one", {0: iterations(20)})
    write_cluster(root / "cluster", ClusterPlan(ranks=2, steps=10))
    graph = graphs.write_graph_files(graphs.mlp_graph(), root / "graph")["pbtxt"]
    return {"prof": prof, "cluster": root / "cluster", "graph": graph}


def run_with_closed_stdout(*argv: str) -> tuple[int, str]:
    child = subprocess.Popen([sys.executable, "-m", "npu_tf_profiling", *argv], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # type: ignore[union-attr]  # the reader is gone before the first line
    _, err = child.communicate(timeout=120)
    return child.returncode, err.decode()


@pytest.mark.parametrize("argv", [
    ("points", "{graph}"),
    ("summary", "{prof}"),
    ("summary", "{prof}", "--json"),
    ("report", "{prof}"),
    ("cluster", "{cluster}", "--no-tasks"),
])
def test_closed_pipe_ends_quietly(inputs: dict[str, Path], argv: tuple[str, ...]) -> None:
    code, err = run_with_closed_stdout(*(a.format(**inputs) for a in argv))
    assert "Traceback" not in err and "Broken pipe" not in err and "BrokenPipeError" not in err, err
    assert "error" not in err, err  # not mistaken for a bad input folder either
    assert code == EXIT_BROKEN_PIPE
