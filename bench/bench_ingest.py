"""Bulk ingest of generations: `pairstore ingest generations` vs DuckDB's read_json plus a join.

    .venv/bin/python bench/bench_ingest.py                 # full size: 1,000,000 generations
    .venv/bin/python bench/bench_ingest.py --scale 0.05    # a quick run at 5%

A store with 20,000 generated loop-fix tasks (generators.tasks.generate_loopfix); a JSONL file of
generations on those tasks, 50 samples per task (what bringing a sampling job's outputs in looks like:
item_kind, item_id, output of about 300 characters, sample_index, temperature, top_p, max_new_tokens,
seed). Each contender runs in its own subprocess on its own copy of the store, timed from the parent
(wall clock) and reporting its own peak RSS:

- ours: pairstore.ingest.generations.ingest_generations (the vectorized path: pyarrow's JSON reader,
  Arrow compute checks, the item join and the insert in DuckDB, xxh3-128 ids in Python, one
  transaction, the ingests log with the file's SHA-256);
- duckdb: `INSERT INTO generations SELECT ... FROM read_json(file) JOIN tasks`, the same columns, the
  id from DuckDB's own hash (not the content id), no checks, no log.

Goal: ours at most 3x duckdb, peak memory under 1.5 GB. Writes bench/results/ingest.md and deletes
the work folder unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model, ram_text  # noqa: E402

from pairstore.files import atomic_write_text  # noqa: E402

PY = sys.executable
N_TASKS = 20_000
FULL_ROWS = 1_000_000


def build(work: Path, n_rows: int) -> tuple[Path, Path]:
    from generators.tasks import generate_loopfix
    from pairstore.store.store import open_store

    db = work / "base.duckdb"
    with open_store(db) as store:
        generate_loopfix(store, min(N_TASKS, max(100, n_rows // 50)), seed=5)
        tasks = [r[0] for r in store.con.execute("SELECT task_id FROM tasks ORDER BY task_id").fetchall()]
    path = work / "outs.jsonl"
    filler = "Let me count the letters one at a time and keep a running total as I go. "
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_rows):
            rec = {
                "item_kind": "task",
                "item_id": tasks[i % len(tasks)],
                "output": f"{filler * 4}Sample {i}: the total is {i % 97}.\nFinal answer: {i % 97}",
                "sample_index": i // len(tasks),
                "temperature": 0.8,
                "top_p": 0.95,
                "max_new_tokens": 512,
                "seed": 17,
            }
            f.write(json.dumps(rec) + "\n")
    return db, path


DUCKDB_SQL = """
INSERT INTO generations (gen_id, model, item_kind, item_id, suite, prompt, output, sample_index,
                         temperature, top_p, max_new_tokens, seed, source_file)
SELECT md5(concat_ws(chr(31), 'so7a', j.item_kind, j.item_id, j.sample_index::VARCHAR,
                     j.temperature::VARCHAR, j.output)),
       'so7a', j.item_kind, j.item_id, NULL, [{'role': 'user', 'content': t.prompt}], j.output,
       j.sample_index, j.temperature, j.top_p, j.max_new_tokens, j.seed, 'outs.jsonl'
FROM read_json(?, format = 'newline_delimited', columns = {
        item_kind: 'VARCHAR', item_id: 'VARCHAR', output: 'VARCHAR', sample_index: 'INTEGER',
        temperature: 'DOUBLE', top_p: 'DOUBLE', max_new_tokens: 'INTEGER', seed: 'BIGINT'}) j
JOIN tasks t ON t.task_id = j.item_id
"""


def child(which: str, db: str, path: str) -> None:
    from pairstore.store.store import open_store

    t0 = time.perf_counter()
    with open_store(db) as store:
        if which == "ours":
            from pairstore.ingest.generations import ingest_generations

            res = ingest_generations(store, path, model="so7a")
            added = res.added
        else:
            with store.transaction():
                added = store.con.execute(DUCKDB_SQL, [path]).fetchall()[0][0]
        rows = store.scalar("SELECT count(*) FROM generations")
    print(
        json.dumps(
            {
                "added": added,
                "rows": rows,
                "inner_s": time.perf_counter() - t0,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def run(which: str, base: Path, work: Path, path: Path) -> dict:
    db = work / f"{which}.duckdb"
    shutil.copy(base, db)
    t0 = time.perf_counter()
    out = subprocess.run(
        [PY, __file__, "--child", which, str(db), str(path)], capture_output=True, text=True, check=True
    ).stdout
    wall = time.perf_counter() - t0
    res = json.loads(out.strip().splitlines()[-1])
    res["wall_s"] = wall
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--child", nargs=3, metavar=("WHICH", "DB", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    n = int(FULL_ROWS * args.scale)
    work = ROOT / "bench" / "_work" / "ingest"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        base, path = build(work, n)
        build_s = time.perf_counter() - t0
        size_mb = path.stat().st_size / 1e6
        results = {w: run(w, base, work, path) for w in ("duckdb", "ours")}
        load_after = os.getloadavg()[0]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    ours, duck = results["ours"], results["duckdb"]
    ratio = ours["wall_s"] / duck["wall_s"]
    text = textwrap.dedent(f"""\
        ## ingest

        {n:,} generations on {min(N_TASKS, max(100, n // 50)):,} stored loop-fix tasks, one JSONL file
        (about {size_mb:,.0f} MB), each contender in its own process on its own copy of the store.
        Machine: {cpu_model()}, {os.cpu_count()} CPUs, {ram_text()}, {platform.python_version()};
        load average {load_before:.1f} before, {load_after:.1f} after (the machine is shared: other
        jobs show up in every figure). Building the store and the file: {build_s:.1f} s.

        | contender | wall s | rows/s | peak RSS MB | rows added |
        | --- | --- | --- | --- | --- |
        | pairstore ingest generations (checks, content ids, log) | {ours["wall_s"]:.1f} | \
{n / ours["wall_s"]:,.0f} | {ours["peak_rss_mb"]:,.0f} | {ours["added"]:,} |
        | DuckDB read_json + join (no checks, md5 ids) | {duck["wall_s"]:.1f} | \
{n / duck["wall_s"]:,.0f} | {duck["peak_rss_mb"]:,.0f} | {duck["added"]:,} |

        Ours / DuckDB: **{ratio:.1f}x** wall clock (goal: at most 3x); peak memory
        {ours["peak_rss_mb"]:,.0f} MB (goal: under 1,500 MB).

        `.venv/bin/python bench/bench_ingest.py{"" if args.scale == 1 else f" --scale {args.scale}"}`
        """)
    out = ROOT / "bench" / "results" / "ingest.md"
    atomic_write_text(out, text)
    print(text)


if __name__ == "__main__":
    main()
