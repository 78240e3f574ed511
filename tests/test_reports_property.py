"""Property: for any valid raw record sequence, the CSV obeys the formulas and the JSON validates."""
from __future__ import annotations

import json
import math
import random
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.writer import write_step_trace_reports
from tests.helpers.raw_fixtures import NA, T0, assert_step_trace_formulas, make_prof_dir, read_csv, record

# Durations in µs, with fractions, sometimes negative (out-of-order clocks must
# still give a valid timeline) and sometimes missing.
dur = hs.floats(min_value=0, max_value=5e4, allow_nan=False).map(lambda x: round(x, 2))
maybe_neg = hs.one_of(dur, dur.map(lambda x: -x))
opt = lambda s: hs.one_of(hs.none(), s)  # noqa: E731


@hs.composite
def model_records(draw, model_id: int, with_step: bool):
    n = draw(hs.integers(1, 8))
    t = T0 + draw(dur)
    step0 = draw(hs.integers(0, 1000))
    drop = draw(hs.sets(hs.integers(1, n), max_size=2)) if n > 2 else set()  # lost lines
    out = []
    for run in range(1, n + 1):
        aug, fp_bp, refresh = draw(dur), draw(maybe_neg), draw(maybe_neg)
        inference = draw(hs.booleans()) and draw(hs.booleans())
        fp = t + aug
        bp = fp + fp_bp
        end = max(bp + refresh, t + 1.0)  # iteration ends keep increasing
        n_gn = draw(hs.integers(0, 2))
        get_next = [
            [draw(opt(hs.just(fp - draw(dur) - 5))), draw(opt(hs.just(fp - 1)))] for _ in range(n_gn)
        ]
        n_red = draw(hs.integers(0, 3))
        reduce = []
        for _ in range(n_red):
            start = fp + draw(dur)
            reduce.append([start, start + draw(dur)])
        if run not in drop:
            out.append(
                record(
                    model_id=model_id,
                    run=run,
                    step=step0 + run if with_step else None,
                    iteration_end=end,
                    fp_start=None if inference else fp,
                    bp_end=None if inference else bp,
                    get_next=get_next,
                    reduce=reduce,
                )
            )
        t = end
    return out


@hs.composite
def device_records(draw):
    models = draw(hs.sets(hs.integers(1, 5), min_size=1, max_size=3))
    records = []
    for m in sorted(models):
        records += draw(model_records(m, with_step=draw(hs.booleans())))
    seed = draw(hs.integers(0, 2**16))
    random.Random(seed).shuffle(records)  # file order need not be time order
    return records


def _whole(x):
    return math.floor(x + 0.5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(devices=hs.dictionaries(hs.integers(0, 7), device_records(), min_size=1, max_size=2))
def test_random_records_csv_formulas_hold_and_timeline_validates(tmp_path_factory, devices):
    root = tmp_path_factory.mktemp("prop")
    devices = {d: recs for d, recs in devices.items() if recs} or {0: [record()]}
    prof = make_prof_dir(root, devices)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # negative spans are warned about; checked elsewhere
        csv_path, json_path = write_step_trace_reports(prof)
    header, rows = read_csv(csv_path)
    assert_step_trace_formulas(header, rows)

    # One row per record, under the right device/model, ids from step or run.
    assert len(rows) == sum(len(r) for r in devices.values())
    max_groups = max(len(r["reduce"]) for recs in devices.values() for r in recs)
    assert header.count("Reduce Start(us)") == max_groups
    for device_id, recs in devices.items():
        for model_id in {r["model_id"] for r in recs}:
            mine = sorted((r for r in recs if r["model_id"] == model_id), key=lambda r: r["iteration_end"])
            got = [row for row in rows if row[0] == str(device_id) and row[9] == str(model_id)]
            key = "step" if mine[0]["step"] is not None else "run"
            assert [int(row[1]) for row in got] == [r[key] for r in mine]
            for r, row in zip(mine, got):
                assert int(row[4]) == _whole(r["iteration_end"])
                assert row[2] == (NA if r["fp_start"] is None else str(_whole(r["fp_start"])))
            # Data Aug Bound is N/A on the first row of each model.
            assert got[0][8] == NA

    events = json.loads(json_path.read_text())
    assert validate_chrome_trace(events) == []
