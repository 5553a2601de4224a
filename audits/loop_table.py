"""The loop table over `generations`: per model and suite, how many outputs the repetition scanner
(audits.loops) flags, how many are catastrophic or empty, and the mean length.

    pairstore audit loops --model sm11a --suite lf2
    pairstore audit loops --json --rescan                # every model, every output scanned now
"""

from __future__ import annotations

from contextlib import ExitStack

from audits.loops import scan_many
from pairstore.errors import NotFound
from pairstore.progress import current as current_progress

LOOP_TABLE_COLUMNS = (
    "model",
    "suite",
    "outputs",
    "scannable",
    "flagged",
    "catastrophic",
    "empty",
    "avg_len",
    "rescanned",
)


def loop_table(
    store, model: str | None = None, suite: str | None = None, *, rescan: bool = False, batch_rows: int = 4096
) -> list[dict]:
    """The model card's loop table over `generations`: one row per (model, suite).

    Each row: model, suite (None for outputs outside a suite), outputs, scannable
    (non-empty outputs), flagged and catastrophic (among the scannable), empty,
    avg_len (mean output length in tokens over all outputs, empties included,
    as the card reports it) and rescanned (outputs scanned now).

    Flags come from the stored loop_flagged / loop_catastrophic columns, which
    the sampler and ingest fill with this scanner; an output whose columns are
    NULL is scanned now, and `rescan=True` scans every output (the card's
    "uniform rescan"). Lengths use the stored n_tokens (the model's tokenizer
    where the sampler knew it) and the scanner's token count where it is NULL.
    Emptiness is always read from the text. Raises NotFound when a model or
    suite was asked for and has no generations.
    """

    where, params = [], []
    if model is not None:
        where.append("model = ?")
        params.append(model)
    if suite is not None:
        where.append("suite = ?")
        params.append(suite)
    sql = "SELECT model, suite, output, loop_flagged, loop_catastrophic, n_tokens FROM generations" + (
        " WHERE " + " AND ".join(where) if where else ""
    )
    total = store.con.execute(f"SELECT count(*) FROM ({sql})", params).fetchall()[0][0]
    cur = store.con.cursor()
    stages = ExitStack()
    stage = stages.enter_context(
        current_progress().stage("audit loops: outputs", total=total, unit="outputs")
    )
    try:
        cur.execute(sql, params)
        totals: dict[tuple, list[int]] = {}
        while True:
            rows = cur.fetchmany(batch_rows)
            if not rows:
                break
            stage.advance(len(rows))
            need = [i for i, r in enumerate(rows) if rescan or r[3] is None or r[4] is None or r[5] is None]
            scanned = dict(zip(need, scan_many([rows[i][2] for i in need])))
            for i, (m, s, output, flagged, catastrophic, n_tokens) in enumerate(rows):
                acc = totals.setdefault((m, s), [0, 0, 0, 0, 0, 0, 0])
                empty = not output or output.isspace()
                report = scanned.get(i)
                if report is not None:
                    if rescan or flagged is None or catastrophic is None:
                        flagged, catastrophic = report.flagged, report.catastrophic
                    if n_tokens is None:
                        n_tokens = report.n_tokens
                    acc[6] += 1
                acc[0] += 1
                acc[1] += not empty
                acc[2] += bool(flagged) and not empty
                acc[3] += bool(catastrophic) and not empty
                acc[4] += empty
                acc[5] += n_tokens or 0
    finally:
        cur.close()
        stages.close()
    if not totals and (model is not None or suite is not None):
        asked = ", ".join(f"{k} {v!r}" for k, v in (("model", model), ("suite", suite)) if v is not None)
        raise NotFound(f"no generations for {asked}")
    table = []
    for (m, s), (outputs, scannable, flagged, catastrophic, empty, length, rescanned) in sorted(
        totals.items(), key=lambda kv: (kv[0][0], kv[0][1] is None, kv[0][1] or "")
    ):
        table.append(
            {
                "model": m,
                "suite": s,
                "outputs": outputs,
                "scannable": scannable,
                "flagged": flagged,
                "catastrophic": catastrophic,
                "empty": empty,
                "avg_len": round(length / outputs, 1),
                "rescanned": rescanned,
            }
        )
    return table
