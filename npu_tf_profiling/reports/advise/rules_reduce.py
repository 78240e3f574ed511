"""All-reduce not overlapped with the backward pass: the Reduce time after BP End.

Per iteration, the exposed reduce is max(0, last Reduce end - BP End). Packing
the gradients into K groups lets all but the last overlap the backward pass:
the gain is e * (1 - 1/K), e the exposed share.
"""
from __future__ import annotations

import numpy as np

from npu_tf_profiling.reports.advise.evidence import ModelEvidence
from npu_tf_profiling.reports.advise.findings import LOW, Finding, pct, unknown_where
from npu_tf_profiling.reports.step import table as st

MIN_EXPOSED_SHARE = 0.05
PACKS = 4


def exposed_reduce(ev: ModelEvidence) -> list[Finding]:
    rows = ev.rows
    starts = [c for c in rows.columns if str(c).startswith(st.REDUCE_START)]
    durations = [c for c in rows.columns if str(c).startswith(st.REDUCE_DURATION)]
    if not starts or len(starts) != len(durations) or ev.total_us <= 0:
        return []
    ends = np.nanmax(np.stack([rows[s].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
                               + rows[d].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
                               for s, d in zip(starts, durations)]), axis=0)
    bp = rows[st.BP_END].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
    exposed = np.nansum(np.clip(ends - bp, 0, None))
    e = float(exposed) / ev.total_us
    if e < MIN_EXPOSED_SHARE:
        return []
    # One rank of several, read alone: its Reduce may be the wait for a slower rank (ranks.py tells them apart).
    alone = (f" (rank {ev.info.rank_id} of {ev.info.rank_size}, read alone: part of this may be the wait for a slower "
             "rank; `npu-tf-prof advise` on the job's output folder tells the wait apart)") if (ev.info.rank_size or 1) > 1 else ""
    return [Finding("all-reduce not overlapped", "collective grouping/packing",
                    {"exposed_reduce_pct": pct(e), "reduce_share_pct": pct(ev.summary.shares.get("Reduce"))},
                    "let the all-reduce overlap the backward pass: tf.distribute.experimental.CommunicationOptions("
                    "bytes_per_pack=32 * 1024 * 1024) in MultiWorkerMirroredStrategy(communication_options=...); "
                    "npu_bridge: set_split_strategy_by_size / by_idx" + alone,
                    unknown_where("the strategy's line is not recorded"), pct(e * (1 - 1 / PACKS)),
                    f"e * (1 - 1/K), e = {e:.3f} (Reduce after BP End), K = {PACKS} packs", LOW)]
