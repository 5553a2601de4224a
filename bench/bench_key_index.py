"""DuckDB's primary-key indexes: the memory a store's keyed tables hold, the part of mining's memory that
grows with what it writes.

    .venv/bin/python bench/bench_key_index.py                   # keys to 1,000,000; a mine of 100,000
    .venv/bin/python bench/bench_key_index.py --keys 200000 --mine 20000   # quick

Every table of the store has a PRIMARY KEY, which DuckDB keeps as an ART index. This measures, with
DuckDB's memory limit at 64 MB (so that anything DuckDB can spill or evict is not counted), what that
index holds:

- keys alone: a table shaped like `pairs` (a 32-hex-digit key and a 600-byte row) filled 50,000 rows
  a transaction, with the index (`PRIMARY KEY`) and without; DuckDB's ART_INDEX memory
  (`duckdb_memory()`) as each chunk's insert leaves it, before its commit (whose checkpoint may write
  the index out), the first failure, and the index memory after the store is reopened and one more row
  is written. The same rows in one transaction, with the index.
- the mine: a store of bench/bench_mining.py's synthetic generations (its build_store), mined the way
  that bench does (self-repair on gsm8k, then math, then loop-fix; no memory limit), ART_INDEX memory
  and the rows of `pairs` and `pair_origins` as each mine's pairs are inserted, before the commit (a
  probe wrapped around the pairs' insert), so the index's bytes per pair. Since migration m010 the two
  tables have no index, their keys kept unique by their writer; before it, this read 0.53 KB a pair.

Nothing here is timed. Writes bench/results/key_index.md.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from machine import cpu_model, nproc, ram_text  # noqa: E402 (bench/machine.py)

from pairstore.files import atomic_write_text  # noqa: E402

LIMIT = "64MB"
CHUNK = 50_000


def art_mb(con: duckdb.DuckDBPyConnection) -> float:
    got = con.execute(
        "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'ART_INDEX'"
    ).fetchone()
    return (got[0] or 0) / 1e6 if got else 0.0


def fill(db: Path, keys: int, *, indexed: bool, one_transaction: bool) -> dict:
    """Rows to `keys` in chunks (each its own transaction unless `one_transaction`): the index's memory
    at each tenth of the way, and where it failed."""
    con = duckdb.connect(str(db), config={"memory_limit": LIMIT, "threads": "2"})
    con.execute(f"CREATE TABLE p (pair_id VARCHAR {'PRIMARY KEY' if indexed else ''}, row_text VARCHAR)")
    marks: list[tuple[int, float]] = []  # (keys written, index MB as the last chunk's insert left it)
    failed = None
    every = max(CHUNK, keys // 10 // CHUNK * CHUNK)
    if one_transaction:
        con.execute("BEGIN")
    for start in range(0, keys, CHUNK):
        try:
            if not one_transaction:
                con.execute("BEGIN")
            con.execute(
                "INSERT INTO p SELECT md5(i::VARCHAR), repeat('x', 600) FROM range(?, ?) t(i)",
                [start, min(keys, start + CHUNK)],
            )
            done = min(keys, start + CHUNK)
            held = art_mb(con)  # before the commit, whose checkpoint may write the index out
            if not one_transaction:
                con.execute("COMMIT")
        except duckdb.Error as e:
            failed = (start, str(e).splitlines()[0][:90])
            break
        if done % every == 0 or done == keys:
            marks.append((done, held))
    if one_transaction and failed is None:
        try:
            con.execute("COMMIT")
        except duckdb.Error as e:
            failed = (keys, str(e).splitlines()[0][:90])
    con.close()
    reopened = None
    if failed is None and not one_transaction:
        con = duckdb.connect(str(db), config={"memory_limit": LIMIT, "threads": "2"})
        before = art_mb(con)
        con.execute("INSERT INTO p VALUES ('one more row', 'x')")
        reopened = (before, art_mb(con))
        con.close()
    return {"marks": marks, "failed": failed, "reopened": reopened}


def mine_child(db: str) -> None:
    """In a process of its own: the three mines of bench_mining on the store at `db`, a line for each,
    read as each mine's pairs are inserted (inside the transaction that writes them: the commit's
    checkpoint may write an index out, so after it the memory the mine needed is gone)."""
    import json

    import bench_mining

    from pairstore.store.store import open_store
    from pairstore.tables import pairs as pairs_table

    insert = pairs_table._insert_new
    seen: list[dict] = []

    def measured_insert(store, *args, **kwargs):  # the bench's probe: what the transaction holds
        insert(store, *args, **kwargs)
        pairs, origins = store.con.execute(
            "SELECT (SELECT count(*) FROM pairs), (SELECT count(*) FROM pair_origins)"
        ).fetchone()
        seen.append({"pairs": pairs, "origins": origins, "art_mb": art_mb(store.con)})

    pairs_table._insert_new = measured_insert
    with open_store(db) as store:
        for name, run in bench_mining.mines(store, 1):
            run()
            print(json.dumps({"mine": name, **seen[-1]}))


def mine(work: Path, n: int) -> list[dict]:
    import json

    import bench_mining

    db = work / "mine.duckdb"
    bench_mining.build_store(db, n, 2026)
    out = subprocess.run(
        [sys.executable, __file__, "--child-mine", str(db)], check=True, capture_output=True, text=True
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def report(keys: int, runs: dict[str, dict], mined: list[dict], n_mine: int, command: str) -> str:
    lines = [
        "## DuckDB's primary-key indexes: memory per key, and in a mine",
        "",
        f"Command: `{command}`  ",
        f"Machine: {nproc()} cores ({cpu_model()}), {ram_text()} RAM, Python {platform.python_version()}, "
        f"duckdb {duckdb.__version__}. DuckDB's memory limit {LIMIT} in the keys-alone runs. Nothing timed.",
        "",
    ]
    chunked = runs["index, a transaction each 50,000"]
    per_key = max((mb * 1e6 / done for done, mb in chunked["marks"]), default=0.0)
    head = f"while a table is written, its key index holds up to {per_key:.0f} bytes a key in memory"
    if chunked["failed"]:
        at = chunked["failed"][0]
        head += f"; filling 50,000 rows a transaction under a {LIMIT} limit failed at {at:,} keys"
    if mined:
        end = mined[-1]
        pairs, origins, mb = end["pairs"], end["origins"], end["art_mb"]
        head += (
            f"; a mine of {n_mine:,} generations wrote {pairs:,} pairs ({origins:,} origin rows) "
            f"and held {mb:.1f} MB of index before its last commit, {mb * 1e3 / pairs:.2f} KB "
            f"per pair ({mb * 1e6 / (pairs + origins):.0f} bytes a key; before migration m010 gave "
            "`pairs` and `pair_origins` no index, 14.7 MB, 0.53 KB a pair)"
        )
    lines += [f"Headline: {head}", ""]
    lines += [
        "| run | keys | ART_INDEX MB | bytes a key | what happened |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, got in runs.items():
        for done, mb in got["marks"]:
            lines.append(f"| {name} | {done:,} | {mb:.1f} | {mb * 1e6 / done:.0f} |  |")
        if got["failed"]:
            at, why = got["failed"]
            lines.append(f"| {name} | {at:,} |  |  | failed: {why} |")
        if got["reopened"]:
            before, after = got["reopened"]
            lines.append(
                f"| {name}, reopened | (all) | {before:.1f} then {after:.1f} |  | "
                "index memory on opening, then after writing one row |"
            )
    if mined:
        lines += [
            "",
            f"The mine (bench/bench_mining.py's store of {n_mine:,} generations, no memory limit), just "
            "as each miner's pairs are inserted, before their commit (inside its transaction; every key "
            "index DuckDB held):",
            "",
            "| mine | pairs | pair_origins rows | ART_INDEX MB | KB per pair |",
            "| --- | --- | --- | --- | --- |",
        ]
        for m in mined:
            lines.append(
                f"| {m['mine']} | {m['pairs']:,} | {m['origins']:,} | {m['art_mb']:.1f} | "
                f"{m['art_mb'] * 1e3 / m['pairs']:.2f} |"
            )
    lines += [
        "",
        "Reading: while a keyed table is written, DuckDB holds its primary-key index in memory, and a "
        "write of many keys spread over the key space loads it nearly whole (a checkpoint writes it out "
        "again). The memory limit cannot spill it: committing every 50,000 rows ran out of the limit, "
        "as one transaction did. Without the index the same rows fill under the same limit. "
        "So a writer of many keys grows with them. Since migration m010, `pairs` and `pair_origins` "
        "have no DuckDB index: their one writer adds only keys not stored yet (an anti-join, which "
        "spills), and `pairstore sql --write` refuses a change that repeats a key. A mine's memory "
        "no longer grows with the pairs it writes (the mine's rows above). Every other table keeps "
        "its key: none is written in bulk by a mine.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=1_000_000, help="Rows of the keys-alone runs.")
    ap.add_argument("--mine", type=int, default=100_000, help="Generations of the mine (0: no mine).")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "key_index.md"))
    ap.add_argument("--child-mine", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_mine:
        mine_child(args.child_mine)
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-key-index-"))
    try:
        runs = {}
        for name, indexed, one in (
            ("index, a transaction each 50,000", True, False),
            ("no index, a transaction each 50,000", False, False),
            ("index, one transaction", True, True),
        ):
            db = work / f"keys-{len(runs)}.duckdb"
            runs[name] = fill(db, args.keys, indexed=indexed, one_transaction=one)
            db.unlink(missing_ok=True)
            print(name, runs[name], flush=True)
        mined = mine(work, args.mine) if args.mine else []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    command = " ".join([".venv/bin/python", "bench/bench_key_index.py", *sys.argv[1:]])
    text = report(args.keys, runs, mined, args.mine, command)
    atomic_write_text(Path(args.out), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
