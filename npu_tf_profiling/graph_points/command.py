"""`npu-tf-prof points GRAPH_PATH [--fp NAME] [--bp NAME] [--train-op NAME] [--json] [--top N]`

Shows which ops the profiler will use as fp_point / bp_point (and the data
inputs, all-reduce groups, iteration end and global step) for a saved graph,
why, and the snippet to paste into ``profiling_options``. Users run it before
a profiling run so a wrong point costs seconds, not a whole run.

GRAPH_PATH: a GraphDef (.pb binary / .pbtxt text), a MetaGraphDef (.meta) or
a SavedModel directory (the "train"-tagged meta graph when there is one).

Exit codes: 0 fp and bp found; 2 bad input (missing or unreadable file, an
--fp/--bp/--train-op name that is not in the graph, bad arguments); 3 points
not found (an inference graph, or no fp/bp).

``--json`` prints exactly one JSON object on stdout, also on errors:

    {
      "graph": str,                 # GRAPH_PATH as given
      "source": str | null,         # what was loaded, e.g. "MetaGraphDef file x.meta"
      "ops": int | null,            # number of ops in the graph
      "exit_code": 0 | 2 | 3,
      "error": str | null,          # set when exit_code is 2
      "points": {                   # TracePoints.to_dict(); null on errors
        "fp": str | null, "bp": str | null,
        "bp_inputs": [str],         # gradient tensor names "op:port"
        "get_next": [str],
        "all_reduce": [[str]],      # groups, in execution order
        "iteration_end": str | null,
        "global_step": str | null,
        "is_training": bool,
        "reasons": [str]            # warnings start with "warning: "
      } | null,
      "profiling_options": {"fp_point": str, "bp_point": str} | null,
      "candidates": {"forward": [str], "backward": [str]} | null   # with --top N only
    }
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK

PROG = "npu-tf-prof points"


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("graph", metavar="GRAPH_PATH",
                        help="GraphDef (.pb/.pbtxt), MetaGraphDef (.meta) or SavedModel directory")
    parser.add_argument("--fp", metavar="NAME", default="", help="use this op as fp_point (exact op name)")
    parser.add_argument("--bp", metavar="NAME", default="", help="use this op as bp_point (exact op name)")
    parser.add_argument("--train-op", metavar="NAME", default=None,
                        help="the op your loop runs each step (default: detected)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (schema in the module docs)")
    parser.add_argument("--top", metavar="N", type=_non_negative, default=0,
                        help="also list the first N forward and last N backward candidates")


def run(args: argparse.Namespace) -> int:
    # Loading imports TensorFlow; keep its C++ start-up chatter off the terminal.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from npu_tf_profiling.graph_points.discovery import Discovery
    from npu_tf_profiling.graph_points.errors import GraphLoadError, TracePointsError
    from npu_tf_profiling.graph_points.loading import load_graph

    result: dict[str, Any] = {
        "graph": args.graph, "source": None, "ops": None, "exit_code": EXIT_OK, "error": None,
        "points": None, "profiling_options": None, "candidates": None,
    }
    try:
        loaded = load_graph(args.graph)
        result["source"] = loaded.origin
        discovery = Discovery(loaded, train_op=args.train_op)
        result["ops"] = len(discovery.index)
        points = discovery.points(args.fp, args.bp)
    except (GraphLoadError, TracePointsError) as exc:
        result["exit_code"] = EXIT_BAD_INPUT
        result["error"] = str(exc)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT

    result["points"] = points.to_dict()
    result["profiling_options"] = points.profiling_options()
    if args.top:
        found = discovery.candidates(args.top)
        result["candidates"] = {"forward": list(found.forward), "backward": list(found.backward)}
    result["exit_code"] = EXIT_OK if points.found else EXIT_NOT_FOUND
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print_text(result, discovery)
    return result["exit_code"]


def _print_text(result: dict[str, Any], discovery: Any) -> None:
    points = result["points"]
    index = discovery.index

    def typed(name: str | None) -> str:
        return f"{name}  ({index.op_type(name)})" if name else "N/A"

    lines = [
        f"graph:          {result['graph']}",
        f"loaded:         {result['source']}, {result['ops']} ops",
        f"training step:  {'yes' if points['is_training'] else 'no'}",
        f"iteration_end:  {typed(points['iteration_end'])}",
        f"fp_point:       {typed(points['fp'])}",
        f"bp_point:       {typed(points['bp'])}",
        f"get_next:       {', '.join(points['get_next']) or 'none'}",
        f"global_step:    {points['global_step'] or 'none'}",
    ]
    if points["all_reduce"]:
        lines.append(f"all_reduce:     {len(points['all_reduce'])} group(s)")
        for k, group in enumerate(points["all_reduce"], 1):
            shown = ", ".join(group[:3]) + (f", ... ({len(group)} ops)" if len(group) > 3 else "")
            lines.append(f"  group {k}: {shown}")
    else:
        lines.append("all_reduce:     none")
    if points["bp_inputs"]:
        lines.append(f"bp_inputs:      {len(points['bp_inputs'])} gradient tensors, e.g. {points['bp_inputs'][-1]}")
    lines.append("reasons:")
    lines.extend(f"  - {reason}" for reason in points["reasons"])
    if result["candidates"] is not None:
        candidates = result["candidates"]
        for label, names in (("forward candidates (first ones, in execution order)", candidates["forward"]),
                             ("backward candidates (last ones, latest first)", candidates["backward"])):
            lines.append(f"{label}:" + ("" if names else " none"))
            lines.extend(f"  {k}. {typed(name)}" for k, name in enumerate(names, 1))
    if result["exit_code"] == EXIT_OK:
        lines.append("paste into profiling_options:")
        lines.append("  " + json.dumps(result["profiling_options"]))
    else:
        lines.append("no fp/bp points found: " + (
            "the graph has no training step (no optimizer update fed by gradients); "
            "if it has one, pass --train-op NAME" if not points["is_training"] else
            "see the reasons above; pass --fp/--bp to choose ops yourself"))
    print("\n".join(lines))
