"""`npu-tf-prof points`: files written by the tests, text and --json output, exit codes."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.graph_points import TracePoints, find_trace_points
from tests.helpers import graphs_for_tests as graphs

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")

REPO = Path(__file__).resolve().parents[1]
CNN_SNIPPET = '{"fp_point": "conv/Conv2D", "bp_point": "gradients/conv/Conv2D_grad/Conv2DBackpropFilter"}'
TOP_KEYS = {"graph", "source", "ops", "exit_code", "error", "points", "profiling_options", "candidates"}
POINT_KEYS = {"fp", "bp", "bp_inputs", "get_next", "all_reduce", "iteration_end", "global_step", "is_training",
              "reasons", "iteration_end_also"}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("points_cli")
    written = graphs.write_graph_files(graphs.cnn_graph("adam"), root / "cnn")
    written["saved_model"] = graphs.write_saved_model(graphs.cnn_graph("adam"), root / "saved_model")
    written["inference"] = graphs.write_graph_files(graphs.inference_graph(), root / "inference")["pbtxt"]
    corrupt = root / "corrupt.pb"
    corrupt.write_bytes(b"\x0a\xff\xff\xff\xff garbage")
    written["corrupt"] = corrupt
    return written


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(["points", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)  # exactly one JSON document on stdout


@pytest.mark.parametrize("kind", ["pbtxt", "pb", "meta", "saved_model"])
def test_text_output_for_each_file_kind(files: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str) -> None:
    assert main(["points", str(files[kind])]) == 0
    out = capsys.readouterr().out
    assert "fp_point:       conv/Conv2D  (Conv2D)" in out
    assert "bp_point:       gradients/conv/Conv2D_grad/Conv2DBackpropFilter  (Conv2DBackpropFilter)" in out
    assert "get_next:       IteratorGetNext" in out
    assert "  - fp = conv/Conv2D: first compute op consuming IteratorGetNext:0" in out
    assert "paste into profiling_options:\n  " + CNN_SNIPPET in out
    source = {"pbtxt": "GraphDef text file", "pb": "GraphDef file", "meta": "MetaGraphDef file",
              "saved_model": "SavedModel"}[kind]
    assert f"loaded:         {source}" in out
    # collections (meta, SavedModel) or structure (GraphDefs): the same train op
    assert "iteration_end:  Adam  (AssignAddVariableOp)" in out


def test_json_schema(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(capsys, str(files["meta"]))
    assert code == 0 and result["exit_code"] == 0
    assert set(result) == TOP_KEYS
    assert set(result["points"]) == POINT_KEYS
    assert result["graph"] == str(files["meta"])
    assert result["error"] is None and result["candidates"] is None
    assert isinstance(result["ops"], int) and result["ops"] > 100
    assert json.dumps(result["profiling_options"]) == CNN_SNIPPET
    assert TracePoints.from_dict(result["points"]) == find_trace_points(files["meta"])
    points = result["points"]
    assert isinstance(points["bp_inputs"], list) and all(":" in t for t in points["bp_inputs"])
    assert points["all_reduce"] == [] and points["is_training"] is True


def test_top_candidates(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(capsys, str(files["pb"]), "--top", "3")
    assert code == 0
    candidates = result["candidates"]
    assert candidates["forward"] == ["conv/Conv2D", "conv/BiasAdd", "conv/Relu"]
    assert candidates["backward"][0] == "gradients/conv/Conv2D_grad/Conv2DBackpropFilter"
    assert len(candidates["backward"]) == 3
    assert main(["points", str(files["pb"]), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "forward candidates (first ones, in execution order):\n  1. conv/Conv2D  (Conv2D)\n  2. conv/BiasAdd" in out
    assert "backward candidates (last ones, latest first):\n  1. gradients/conv/Conv2D_grad/Conv2DBackpropFilter" in out


def test_user_points_and_warnings(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(capsys, str(files["pbtxt"]), "--fp", "conv/kernel/Assign", "--bp", "logits/MatMul")
    assert code == 0
    assert result["profiling_options"] == {"fp_point": "conv/kernel/Assign", "bp_point": "logits/MatMul"}
    warnings = [r for r in result["points"]["reasons"] if r.startswith("warning: ")]
    assert len(warnings) == 2


def test_wrong_name_is_bad_input_with_suggestions(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["points", str(files["pbtxt"]), "--fp", "conv/Conv2d"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("npu-tf-prof points: error: fp_point 'conv/Conv2d' is not an op in this graph")
    assert "'conv/Conv2D'" in err
    code, result = run_json(capsys, str(files["pbtxt"]), "--bp", "gradients/conv/Conv2D_grad/Conv2DBackpropFiltr")
    assert code == 2 and result["exit_code"] == 2 and result["points"] is None
    assert "'gradients/conv/Conv2D_grad/Conv2DBackpropFilter'" in result["error"]


def test_missing_and_corrupt_files_exit_2(files: dict[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.pbtxt"
    assert main(["points", str(missing)]) == 2
    captured = capsys.readouterr()
    assert f"npu-tf-prof points: error: {missing}: no such file or directory" in captured.err
    assert captured.out == ""
    assert main(["points", str(files["corrupt"])]) == 2
    assert f"{files['corrupt']}: not a readable graph" in capsys.readouterr().err
    code, result = run_json(capsys, str(files["corrupt"]))
    assert code == 2 and str(files["corrupt"]) in result["error"]


def test_inference_graph_exits_3(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["points", str(files["inference"])]) == 3
    out = capsys.readouterr().out
    assert "training step:  no" in out and "fp_point:       N/A" in out
    assert "no fp/bp points found: the graph has no training step" in out
    code, result = run_json(capsys, str(files["inference"]))
    assert code == 3 and result["exit_code"] == 3
    assert result["points"]["fp"] is None and result["points"]["is_training"] is False


def test_bad_arguments_exit_2(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["points", str(files["pb"]), "--top", "-1"]) == 2
    assert main(["points"]) == 2
    capsys.readouterr()


def test_python_dash_m_subprocess(files: dict[str, Path]) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "npu_tf_profiling", "points", str(files["saved_model"]), "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert json.dumps(result["profiling_options"]) == CNN_SNIPPET
    assert "SavedModel" in result["source"]
