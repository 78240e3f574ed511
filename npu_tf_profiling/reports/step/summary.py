"""Where the iteration time goes, per (device, model), with an input-bound verdict.

Numbers come from the step-trace table (so they match the CSV):

* statistics use the *steady* iterations, those whose previous iteration is
  known: a first iteration's time is measured differently (from FP Start, not
  from the previous end) and carries graph warm-up, so it would skew both the
  mean and the shares. A model with no steady iteration falls back to all
  iterations with a known time (``basis`` says which);
* a share is Σ component / Σ Iteration Time over the iterations where both
  are known. Data Aug Bound + FP to BP + Iteration Refresh tile the iteration
  (they add up to 100%); GetNext normally lies inside Data Aug Bound and
  Reduce inside FP to BP, so those two overlap the others;
* input time is GetNext Time when the graph has a GetNext, else Data Aug Bound
  (feed_dict input, or no GetNext probe), and the verdict uses XProf's
  thresholds: ≥ 20% of step time is highly input-bound, ≥ 5% moderately;
* an iteration whose call retraced its step (a new input signature: a loop's
  partial last batch) is left out like warm-up, and named with its function,
  signature and seconds (``retraces``);
* task-traced iterations (FULL_TRACE) and the iteration after each are left
  out of every statistic, and counted (``reports.task.traced`` says why):
  they measure the profiler. Only when nothing else is left are they used,
  and the text says the numbers then include task_trace's overhead;
* a user fp/bp point the runtime replaced, and FP/BP columns N/A on every
  iteration, get a note built from info.json (``point_notes``);
* Data Aug Bound is split by cause where the runtime recorded the other runs
  (``between``): input (GetNext), other session runs / function calls (each
  kind's count and time), host. The verdict then counts only input: GetNext
  Time; without it, the runs that fetch an input batch to feed it, or else the
  gap less the other runs (a feed_dict batch is made on the host: an upper
  bound). So an evaluation run every step is named as such, not as input.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format.other_runs import INPUT_READS
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.host import stack_time
from npu_tf_profiling.reports.anomalies import DROPPED_KEY
from npu_tf_profiling.reports.anomalies import KEY as ANOMALIES_KEY
from npu_tf_profiling.reports.anomalies import anomalies_of, dropped_traces_of, render_anomaly, render_dropped
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.between import OTHER, load_other_runs, summarize_split
from npu_tf_profiling.reports.step.point_notes import point_notes
from npu_tf_profiling.reports.host.notes import model_notes as host_model_notes
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir

HIGHLY_INPUT_BOUND = "highly input-bound"
MODERATELY_INPUT_BOUND = "moderately input-bound"
NOT_INPUT_BOUND = "not input-bound"
UNKNOWN_INPUT_BOUND = "unknown (no input timing)"
HIGH_THRESHOLD = 0.20
MODERATE_THRESHOLD = 0.05

SHARE_DATA_AUG = "Data Aug Bound"
SHARE_GETNEXT = "GetNext"
SHARE_FP_BP = "FP to BP"
SHARE_REFRESH = "Iteration Refresh"
SHARE_REDUCE = "Reduce"
SHARE_NAMES = [SHARE_DATA_AUG, SHARE_GETNEXT, SHARE_FP_BP, SHARE_REFRESH, SHARE_REDUCE]

BASIS_STEADY = "steady"
BASIS_ALL = "all"


def input_bound_verdict(input_share: Optional[float]) -> str:
    """XProf's verdict for the share (0..1) of step time spent on input."""
    if input_share is None:
        return UNKNOWN_INPUT_BOUND
    if input_share >= HIGH_THRESHOLD:
        return HIGHLY_INPUT_BOUND
    if input_share >= MODERATE_THRESHOLD:
        return MODERATELY_INPUT_BOUND
    return NOT_INPUT_BOUND


@dataclass
class ModelSummary:
    """Summary of one Model ID on one device. Times in µs, shares as fractions 0..1."""

    device_id: int
    model_id: int
    iterations: int
    first_iteration_id: Optional[int]
    last_iteration_id: Optional[int]
    basis: str
    basis_iterations: int
    median_iteration_time_us: Optional[float]
    mean_iteration_time_us: Optional[float]
    shares: dict[str, Optional[float]] = field(default_factory=dict)
    input_share: Optional[float] = None
    input_measure: Optional[str] = None
    verdict: str = UNKNOWN_INPUT_BOUND
    # Iterations left out because task_trace disturbed them: traced ones, and those right after one.
    task_traced_left_out: int = 0
    task_traced: int = 0
    # True when every timed iteration was disturbed, so the statistics had to use them anyway.
    task_traced_included: bool = False
    # Whether some iteration has an FP Start / BP End; and what info.json says about the points.
    fp_measured: bool = True
    bp_measured: bool = True
    point_notes: list[str] = field(default_factory=list)
    # What traced its tasks: a Session's runs use RunOptions(FULL_TRACE), a TF2 function's calls tf.profiler.
    tracer: str = "FULL_TRACE"
    # Data Aug Bound split by cause (``between.summarize_split``); None when the runtime did not record other runs.
    between: Optional[dict[str, Any]] = None
    # The iterations whose call retraced the step, left out like warm-up: {"iteration": id, "retrace": words}.
    retraces: list[dict[str, Any]] = field(default_factory=list)
    # with_stack / gc_detect_threshold (``stack_time.stack_summary`` / ``gc_summary``); None when not asked for.
    host_stacks: Optional[dict[str, Any]] = None
    gc_pauses: Optional[dict[str, Any]] = None
    # What the host side recorded (host_sys / profile_memory / mstx, ``reports.host.notes``): one line each.
    host_notes: list[str] = field(default_factory=list)

    def render_lines(self) -> list[str]:
        """The statistics, the verdict and the notes, one line each (the summary's text and the view show them)."""
        basis = "steady iterations" if self.basis == BASIS_STEADY else "all iterations (none steady)"
        lines = [f"Iteration Time over {self.basis_iterations} {basis}: "
                 f"median {_us(self.median_iteration_time_us)}, mean {_us(self.mean_iteration_time_us)}"]
        note = _task_trace_note(self)
        if note:
            lines.append(f"({note})")
        lines.append("  ".join(f"{name} {_pct(self.shares.get(name))}" for name in SHARE_NAMES))
        measure = f" ({self.input_measure})" if self.input_measure else ""
        lines.append(f"Input: {_pct(self.input_share)} of step time{measure} -> {self.verdict}")
        if self.between is not None:
            lines.append(_between_line(self.between, stack_time.host_clause(self.host_stacks)))
            lines.extend(filter(None, [_long_gaps_line(self.between)]))
        lines.extend(stack_time.render_lines(self.host_stacks, self.gc_pauses, (self.between or {}).get("host_share")))
        if self.retraces:
            lines.append("Retraced, left out of the statistics like warm-up: "
                         + "; ".join(f"Iteration ID {r['iteration']}: {r['retrace']}" for r in self.retraces))
        lines.extend(f"Note: {note}" for note in self.point_notes)
        lines.extend(f"Host: {note}" for note in self.host_notes)
        return lines


@dataclass
class ProfSummary:
    """Summaries of every model of one PROF folder."""

    prof_dir: Path
    models: list[ModelSummary]
    skipped_lines: int = 0
    anomalies: list[dict[str, Any]] = field(default_factory=list)  # anomaly_capture's (reports.anomalies)
    dropped_in_case: list[dict[str, Any]] = field(default_factory=list)  # its look's traces dropped (reports.anomalies)
    top_advice: Optional[str] = None  # `advise`'s best finding, one line (``reports.advise.engine``)

    def to_dict(self) -> dict[str, Any]:
        return {"prof_dir": str(self.prof_dir), "skipped_lines": self.skipped_lines, "models": [asdict(m) for m in self.models],
                ANOMALIES_KEY: self.anomalies, DROPPED_KEY: self.dropped_in_case, "top_advice": self.top_advice}

    def render_text(self) -> str:
        lines = [str(self.prof_dir)]
        if self.skipped_lines:
            lines.append(f"  ({self.skipped_lines} unreadable raw line(s) skipped)")
        for m in self.models:
            lines.append(f"  Device {m.device_id}, Model ID {m.model_id}: {m.iterations} iterations "
                         f"(Iteration ID {m.first_iteration_id}..{m.last_iteration_id})")
            lines.extend("    " + line for line in m.render_lines())
        if self.top_advice:
            lines.append(f"  {self.top_advice}")
        for entry in self.anomalies:
            lines.extend("  " + line for line in render_anomaly(entry))
        lines.extend("  " + line for line in render_dropped(self.dropped_in_case))
        return "\n".join(lines) + "\n"


def _task_trace_note(m: ModelSummary) -> Optional[str]:
    if m.task_traced_included:
        return (f"every timed iteration was task-traced or right after one, so these statistics include "
                f"task_trace's overhead ({m.tracer} and writing its data); {m.task_traced} traced")
    if not m.task_traced_left_out:
        return None
    after = m.task_traced_left_out - m.task_traced
    return (f"{m.task_traced_left_out} task-traced iterations left out: {m.task_traced} traced with {m.tracer}, "
            f"which slows them, and {after} right after one, whose Data Aug Bound holds the writing of the trace")


def _between_line(split: dict[str, Any], host_detail: str = "") -> str:
    """Data Aug Bound by cause, and which cause fills it when it is not input."""
    runs = dict(split["other_runs"])
    reads = runs.pop(INPUT_READS, None)

    def named(items: dict[str, Any]) -> str:
        return ", ".join(f"{kind} {value['count']} run(s), {_us(value['time_us'])}"
                         for kind, value in sorted(items.items(), key=lambda item: -item[1]["time_us"]))

    line = (f"Between iterations (Data Aug Bound {_pct(split['data_aug_bound_share'])}; mean shares of step time): "
            f"input {_pct(split['input_share'])}{f' ({named({INPUT_READS: reads})})' if reads else ''}, "
            f"other runs {_pct(split['other_share'])}{f' ({named(runs)})' if runs else ''}, host {_pct(split['host_share'])}{host_detail}")
    input_share = split["input_share"] or 0.0
    typical = split.get("typical")
    if runs and split["other_share"] >= MODERATE_THRESHOLD and split["other_share"] > max(input_share, split["host_share"]):
        if typical in (None, OTHER):  # the mean and the median gap agree
            top = max(runs.items(), key=lambda item: item[1]["time_us"])[0]
            line += f" -> the time between iterations is mostly {top} runs, not input"
        else:
            line += (f" -> the mean's other runs are in a few long gaps (below); the median gap "
                     f"({_us(split['median_gap_us'])}) is mostly {typical}")
    return line


def _long_gaps_line(split: dict[str, Any]) -> Optional[str]:
    """The gaps listed apart (``between.long_gaps``), or None when there are none."""
    gaps = split.get("long_gaps") or {}
    if not gaps.get("count"):
        return None
    shown = "; ".join(f"Iteration ID {g['iteration']}: {_us(g['duration_us'])} ({g['cause']})" for g in gaps["listed"])
    more = f"; and {gaps['count'] - len(gaps['listed'])} more" if gaps["count"] > len(gaps["listed"]) else ""
    return (f"Long gaps ({gaps['count']} over {gaps['factor']:g}x the median Data Aug Bound, "
            f"{_us(split['median_gap_us'])}): {shown}{more}")


def _us(value: Optional[float]) -> str:
    return st.NA if value is None else f"{value:.1f} us"


def _pct(value: Optional[float]) -> str:
    return st.NA if value is None else f"{100 * value:.1f}%"


def _share(part: pd.Series, whole: pd.Series) -> Optional[float]:
    mask = part.notna() & whole.notna()
    total = whole[mask].sum()
    if not mask.any() or total <= 0:
        return None
    return float(part[mask].sum()) / float(total)


def _stat(value: Any) -> Optional[float]:
    return None if value is None or pd.isna(value) else float(value)


def annotated_frame(table: st.StepTraceTable, task_traced: Optional[tuple[np.ndarray, np.ndarray]] = None,
                    retraced: Optional[np.ndarray] = None) -> pd.DataFrame:
    """The table's rows with what the statistics select on: ``_has_previous``, ``_reduce`` (summed
    Reduce Duration), ``_traced`` and ``_disturbed`` (``ProfData.task_traced``; all False when None),
    ``_retraced`` (``ProfData.retraced``: what retraced there, "" nothing)."""
    traced, disturbed = task_traced if task_traced is not None else (np.zeros(len(table), bool), np.zeros(len(table), bool))
    return table.frame.assign(
        _has_previous=table.has_previous.to_numpy(), _reduce=table.total_reduce().to_numpy(),
        _traced=traced, _disturbed=disturbed,
        _retraced=retraced if retraced is not None else np.full(len(table), "", dtype=object),
    )


def annotated(data: ProfData) -> pd.DataFrame:
    """``annotated_frame`` of a read PROF folder, with its task-traced and retraced rows."""
    return annotated_frame(data.table, data.task_traced, data.retraced)


def basis_rows(rows: pd.DataFrame) -> tuple[str, pd.DataFrame, bool]:
    """The iterations one model's statistics use (rows of ``annotated_frame``): (basis, rows, task-traced included).

    Timed, undisturbed, steady iterations (not a first one, none that retraced);
    without a steady one, every timed undisturbed one; when task_trace disturbed
    every timed iteration, those.
    """
    timed = rows[rows[st.ITERATION_TIME].notna()]
    undisturbed = timed[~timed["_disturbed"]]
    included = undisturbed.empty and not timed.empty
    if not included:
        timed = undisturbed
    steady = timed[timed["_has_previous"]]
    if "_retraced" in steady.columns:
        steady = steady[steady["_retraced"] == ""]
    return (BASIS_STEADY, steady, included) if not steady.empty else (BASIS_ALL, timed, included)


def summarize_table(table: st.StepTraceTable, task_traced: Optional[tuple[np.ndarray, np.ndarray]] = None,
                    retraced: Optional[np.ndarray] = None) -> list[ModelSummary]:
    """One ``ModelSummary`` per (device, model) of a step-trace table.

    ``task_traced``: per row, (task-traced, disturbed by task_trace), as
    ``ProfData.task_traced`` gives; the disturbed rows are left out, and so are
    the ``retraced`` ones (``ProfData.retraced``).
    """
    frame = annotated_frame(table, task_traced, retraced)
    out: list[ModelSummary] = []
    for (device_id, model_id), rows in frame.groupby([st.DEVICE_ID, st.MODEL_ID], sort=True):
        basis, used, included = basis_rows(rows)
        it_time = used[st.ITERATION_TIME].astype("float64")
        shares = {
            SHARE_DATA_AUG: _share(used[st.DATA_AUG_BOUND], used[st.ITERATION_TIME]),
            SHARE_GETNEXT: _share(used[st.GETNEXT_TIME], used[st.ITERATION_TIME]),
            SHARE_FP_BP: _share(used[st.FP_TO_BP], used[st.ITERATION_TIME]),
            SHARE_REFRESH: _share(used[st.ITERATION_REFRESH], used[st.ITERATION_TIME]),
            SHARE_REDUCE: _share(used["_reduce"], used[st.ITERATION_TIME]),
        }
        if shares[SHARE_GETNEXT] is not None:
            input_share, measure = shares[SHARE_GETNEXT], "GetNext Time"
        elif shares[SHARE_DATA_AUG] is not None:
            input_share, measure = shares[SHARE_DATA_AUG], "Data Aug Bound (no GetNext timing)"
        else:
            input_share, measure = None, None
        ids = rows[st.ITERATION_ID_COL].dropna()
        out.append(
            ModelSummary(
                device_id=int(device_id),
                model_id=int(model_id),
                iterations=len(rows),
                first_iteration_id=int(ids.min()) if not ids.empty else None,
                last_iteration_id=int(ids.max()) if not ids.empty else None,
                basis=basis,
                basis_iterations=len(used),
                median_iteration_time_us=_stat(it_time.median()) if not it_time.empty else None,
                mean_iteration_time_us=_stat(it_time.mean()) if not it_time.empty else None,
                shares=shares,
                input_share=input_share,
                input_measure=measure,
                verdict=input_bound_verdict(input_share),
                task_traced_left_out=0 if included else int(rows["_disturbed"].sum()),
                task_traced=int(rows["_traced"].sum()),
                task_traced_included=included,
                fp_measured=bool(rows[st.FP_START].notna().any()),
                bp_measured=bool(rows[st.BP_END].notna().any()),
            )
        )
    return out


def summarize_prof_data(data: ProfData, with_anomalies: bool = True) -> ProfSummary:
    """The folder's summary; ``with_anomalies=False`` leaves out anomaly_capture's entries (their task tables), which
    the advisor's statistics do not read."""
    models = summarize_table(data.table, data.task_traced, data.retraced)
    infos = {d.device_id: d.info for d in data.devices}
    dirs = {d.device_id: d.device_dir for d in data.devices}
    frame = annotated(data) if models else None
    for m in models:
        info = infos.get(m.device_id, RunInfo())
        m.point_notes = point_notes(info, m.model_id, m.fp_measured, m.bp_measured)
        if "function" in info.models.get(str(m.model_id), {}):
            m.tracer = "tf.profiler"
        runs = load_other_runs(dirs[m.device_id], info) if m.device_id in dirs else None
        rows = frame[(frame[st.DEVICE_ID] == m.device_id) & (frame[st.MODEL_ID] == m.model_id)] if frame is not None else None
        if rows is not None:
            m.retraces = [{"iteration": int(i), "retrace": words}
                          for i, words in zip(rows[st.ITERATION_ID_COL], rows["_retraced"]) if words]
        if runs is not None and rows is not None:
            model_info = info.models.get(str(m.model_id), {})
            _apply_split(m, summarize_split(basis_rows(rows)[1], runs), model_info.get("feeds"))
        if m.device_id in dirs and frame is not None:
            _apply_host_time(m, dirs[m.device_id], info, frame, runs)
        if m.device_id in dirs:
            m.host_notes = host_model_notes(dirs[m.device_id], data.table, m.device_id, m.model_id)
    return ProfSummary(prof_dir=data.prof_dir, models=models, skipped_lines=data.skipped_lines,
                       anomalies=anomalies_of(data) if with_anomalies else [],
                       dropped_in_case=dropped_traces_of(data) if with_anomalies else [])


def _apply_split(m: ModelSummary, split: Optional[dict[str, Any]], feeds: Optional[dict[str, Any]] = None) -> None:
    """Record the split; without GetNext timing, the verdict's input is the split's (see the module docstring).

    `feeds` (info.json, ``runtime.session.fed_arrays``): a script that feeds the same values every
    iteration reads no input between them, so its host time is not input and the verdict says so."""
    if split is None:
        return
    m.between = split
    if m.shares.get(SHARE_GETNEXT) is not None:
        return  # GetNext timing: the verdict's input as before
    if split["input_share"] is not None:
        m.input_share, m.input_measure = split["input_share"], "the session runs that fetch the input batch"
        m.verdict = input_bound_verdict(m.input_share)
    elif isinstance(feeds, dict) and feeds.get("same_each_iteration"):
        m.input_share = 0.0
        m.input_measure = (f"no input pipeline: every iteration feeds the same {feeds.get('values')} value(s), "
                           f"so the host time between iterations is not input")
        m.verdict = NOT_INPUT_BOUND
    else:  # feed_dict: the batch is made on the host, so host time bounds input from above, and the verdict says so
        m.input_share = split["host_share"]
        m.input_measure = "host time between iterations, less the other runs (no GetNext timing: an upper bound)"
        verdict = input_bound_verdict(m.input_share)
        m.verdict = verdict if verdict in (NOT_INPUT_BOUND, UNKNOWN_INPUT_BOUND) else f"at most {verdict}"


def _apply_host_time(m: ModelSummary, device_dir: Path, info: RunInfo, frame: pd.DataFrame, runs: Any) -> None:
    """The stacks and GC pauses the run was asked to record, against this model's statistics rows."""
    stacks, pauses = stack_time.load_stacks(device_dir, info), stack_time.load_gc(device_dir, info)
    if stacks is None and pauses is None:
        return
    rows = basis_rows(frame[(frame[st.DEVICE_ID] == m.device_id) & (frame[st.MODEL_ID] == m.model_id)])[1]
    if stacks is not None:
        m.host_stacks = stack_time.stack_summary(stacks, rows, runs)
    if pauses is not None:
        m.gc_pauses = stack_time.gc_summary(pauses, rows, info.option("gc_detect_threshold"))


def summarize_prof_dir(prof_dir: Path | str) -> ProfSummary:
    """Read a PROF folder's raw data and summarise it (raises like ``load_prof_dir``).

    Without advise's top finding: advise reads the summary, so the command that prints both
    (``npu-tf-prof summary``) joins them (``advise.engine.summary_with_top_finding``)."""
    return summarize_prof_data(load_prof_dir(prof_dir))
