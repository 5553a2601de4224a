"""`pairstore audit leaks` on a large mixture vs a pyarrow read plus the gate's matching of the same texts.

    .venv/bin/python bench/bench_leaks.py                          # 2,000,000 rows, 3 interleaved rounds
    .venv/bin/python bench/bench_leaks.py --rows 200000 --runs 1   # a quick run
    .venv/bin/python bench/bench_leaks.py --rows 200000 --before /tmp/old   # also the audit as it was
    .venv/bin/python bench/bench_leaks.py --memory-rows 10000000   # and ours alone on 10M rows (memory)

The file is an exported mixture as `pairstore export` writes it (TRL's conversational preference format:
`prompt` a system and a user message, `chosen` and `rejected` one assistant message each, `pair_id`,
`source`, `family`; zstd parquet), built with DuckDB from synthetic pairs the way bench_export.py builds
its store: 1.7 KB of text per pair, 50% loop-fix prompts from four templates, 11% battle pairs
upsampled x12, 39% self-repair; the mixture is loop-fix limit 0.3 x pairs + battle x12 + self-repair, in
a seeded order. The store holds 34 held-out battles (set `judge34`); the battle pairs of three of them
are left in the mixture (36 leaked rows), the others left out.

Contenders, each its own process, interleaved (A B, B A, ...), CPU time beside wall time, peak RSS
(bench/contenders.py):

- **ours**: audits.leaks.audit_leaks(store, "judge34", [file]): the file's SHA-256, every string of every
  record read in Arrow batches (pairstore.holdout.file_texts), each distinct candidate once, matched in
  chunks with pairstore.holdout.matching.members_in_rows (pairstore.holdout.file_members);
- **baseline**: pyarrow.parquet.read_table of the file (every column, into memory), then one call of
  members_in_rows on the same distinct candidates ours matches (made once beforehand with
  file_members.candidate_tables and memory-mapped from an Arrow file, so reading them costs nothing);
- **before** (with --before DIR, a checkout of the code before this rewrite): that code's audit_leaks.

Writes bench/results/leaks.md (with --rows other than the full size, leaks-ROWS.md) and deletes the
work folder unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from contenders import Contender, ratio_text, ratios, run_interleaved, run_once, summarize  # noqa: E402
from machine import cpu_model, priority_text, ram_text  # noqa: E402

FULL_ROWS = 2_000_000
TEMPLATES = [
    "Please answer the following question carefully and put the final answer on the last line:",
    "Count carefully and give the final answer as 'Final answer: N'.",
    "Solve step by step, then state the result on its own line:",
    "Here is a short exercise. Work it out and answer with a single number:",
]
HELD = 34
LEAKED = 3  # held-out battles whose pairs stay in the mixture


def words_sql(n: str, salt: int) -> str:
    return (
        f"array_to_string(list_transform(range({n}), "
        f"lambda j: getvariable('v')[1 + (hash(i, j, {salt}) % 8000)::INTEGER]), ' ')"
    )


def build(work: Path, rows: int, name: str = "mixture.parquet") -> dict:
    """The mixture file (about `rows` rows) and, once, the store with its held-out battles."""
    import duckdb

    pairs = max(100, round(rows / 2.01))
    loop_limit = int(0.3 * pairs)
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{work / 'duck_tmp'}'")
    con.execute("SET memory_limit = '2GB'")
    con.execute(
        "SET VARIABLE v = (SELECT list(substr(md5(i::VARCHAR), 1 + (i % 7)::INTEGER, 3 + (i % 6)::INTEGER) "
        "ORDER BY i) FROM range(8000) t(i))"
    )
    tmpl = "[" + ", ".join("'" + t.replace("'", "''") + "'" for t in TEMPLATES) + "]"
    # battle pairs are numbered in order (b = their rank among battle pairs) so the held-out ones are known
    keys_sql = f"""
        SELECT i, md5(i::VARCHAR || ':pair') AS pair_id,
               CASE WHEN i % 100 < 50 THEN 'loopfix' WHEN i % 100 < 61 THEN 'battle' ELSE 'self_repair' END
                   AS source,
               CASE WHEN i % 100 BETWEEN 50 AND 60 THEN i // 100 * 11 + (i % 100 - 50) END AS b
        FROM range({pairs}) t(i)"""
    # the mixture's order first, on keys alone (a sort of the texts would need the memory of them all)
    con.execute(f"""
        CREATE TEMP TABLE ord AS
        WITH p AS ({keys_sql}),
        mix AS (
            (SELECT i, pair_id, 0 AS k FROM p WHERE source = 'loopfix'
             ORDER BY hash(12076, pair_id) LIMIT {loop_limit})
            UNION ALL
            (SELECT i, pair_id, c.k FROM p, range(12) c(k)
             WHERE source = 'battle' AND (b >= {HELD} OR b < {LEAKED}))
            UNION ALL
            (SELECT i, pair_id, 0 AS k FROM p WHERE source = 'self_repair'))
        SELECT i FROM mix ORDER BY hash(12076, pair_id, k)""")
    text_sql = f"""
        SELECT i, md5(i::VARCHAR || ':pair') AS pair_id, source,
               CASE source WHEN 'loopfix' THEN 'letter_count' WHEN 'self_repair' THEN 'math' ELSE 'chat' END
                   AS family,
               CASE WHEN source = 'loopfix' THEN {tmpl}[1 + (i % 4)::INTEGER] || ' ' || {words_sql("52", 1)}
                    WHEN source = 'battle' THEN {words_sql("64", 1)}
                    ELSE 'Solve: ' || {words_sql("63", 1)} END AS prompt,
               {words_sql("104", 2)} AS chosen, {words_sql("92", 3)} AS rejected,
               CASE WHEN source = 'battle' THEN i // 100 * 11 + (i % 100 - 50) END AS b
        FROM (SELECT i, CASE WHEN i % 100 < 50 THEN 'loopfix' WHEN i % 100 < 61 THEN 'battle'
                             ELSE 'self_repair' END AS source
              FROM {{rows}})"""
    out = work / name
    # the texts computed row by row in that order (insertion order is kept: no sort, no join)
    con.execute(f"""
        COPY (
            SELECT [{{'role': 'system', 'content': 'You are Brook.'}}, {{'role': 'user', 'content': prompt}}]
                       AS prompt,
                   [{{'role': 'assistant', 'content': chosen}}] AS chosen,
                   [{{'role': 'assistant', 'content': rejected}}] AS rejected,
                   pair_id, source, family
            FROM ({text_sql.format(rows="ord")})
        ) TO '{out}' (FORMAT parquet, COMPRESSION zstd)""")
    held = con.execute(f"""
        WITH p AS ({text_sql.format(rows=f"range({pairs}) t(i)")}) SELECT 'bb' || b::VARCHAR, prompt FROM p
        WHERE source = 'battle' AND b < {HELD} ORDER BY b""").fetchall()
    n_rows, text_bytes = con.execute(
        f"SELECT count(*), sum(length(prompt[2].content) + length(chosen[1].content) + "
        f"length(rejected[1].content)) FROM '{out}'"
    ).fetchall()[0]
    con.close()
    db = work / "store.duckdb"
    if not db.exists():
        _make_store(db, held)
    return {
        "path": str(out),
        "rows": n_rows,
        "pairs": pairs,
        "text_mb": text_bytes / 1e6,
        "file_mb": out.stat().st_size / 1e6,
        "held": [h[0] for h in held],
    }


def grow(src: Path, dst: Path, rows: int) -> dict:
    """A file of `rows` rows made from `src`'s row groups, written again and again, each copy after the
    first with every message and pair id changed ("v2 " in front of each message): as many distinct texts
    per row as `src`, in its row groups, without building that many pairs again."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def renamed(col: pa.ChunkedArray, prefix: str) -> pa.Array:
        arr = col.combine_chunks()
        msgs = arr.values
        content = pc.binary_join_element_wise(prefix, msgs.field("content"), "")
        new = pa.StructArray.from_arrays([msgs.field("role"), content], ["role", "content"])
        return pa.ListArray.from_arrays(arr.offsets, new)

    source = pq.ParquetFile(src)
    written = 0
    text_bytes = 0
    copy = 0
    with pq.ParquetWriter(dst, source.schema_arrow, compression="zstd") as writer:
        while written < rows:
            for g in range(source.num_row_groups):
                table = source.read_row_group(g)
                if copy:
                    prefix = f"v{copy + 1} "
                    for name in ("prompt", "chosen", "rejected"):
                        table = table.set_column(
                            table.schema.get_field_index(name), name, renamed(table[name], prefix)
                        )
                    pair_id = pc.binary_join_element_wise(table["pair_id"], f":{copy + 1}", "")
                    table = table.set_column(table.schema.get_field_index("pair_id"), "pair_id", pair_id)
                table = table.slice(0, rows - written).cast(source.schema_arrow)
                writer.write_table(table, row_group_size=table.num_rows)
                written += table.num_rows
                text_bytes += sum(
                    pc.sum(pc.binary_length(pc.struct_field(pc.list_flatten(table[n]), "content"))).as_py()
                    or 0
                    for n in ("prompt", "chosen", "rejected")
                )
                if written >= rows:
                    break
            copy += 1
    return {
        "path": str(dst),
        "rows": written,
        "pairs": None,
        "text_mb": text_bytes / 1e6,
        "file_mb": dst.stat().st_size / 1e6,
        "copies": copy,
    }


def _make_store(db: Path, held: list[tuple[str, str]]) -> None:
    from pairstore.holdout.sets import add_members
    from pairstore.keys import match_key, match_text
    from pairstore.store.store import open_store

    store = open_store(db)
    members = []
    for battle_id, prompt in held:
        msgs = [{"role": "user", "content": prompt}]
        store.con.execute(
            "INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, "
            "match_key, record_hash) VALUES (?, ?, ['own'], ['opp'], 1, 'loss', ?, ?)",
            [battle_id, msgs, match_key(msgs), battle_id],
        )
        members.append(
            {
                "item_id": battle_id,
                "item_kind": "battle",
                "match_key": match_key(msgs),
                "match_text": match_text(msgs),
                "task_key": None,
            }
        )
    add_members(store, "judge34", members, method="bench")
    store.close()


def write_candidates(db: Path, file: str, out: Path) -> dict:
    """The distinct candidates ours matches, as one Arrow file (the baseline's input)."""
    import pyarrow as pa

    from pairstore.holdout.file_members import candidate_tables
    from pairstore.store.store import open_store

    store = open_store(db, read_only=True)
    tables = list(candidate_tables(store, file))
    store.close()
    table = pa.concat_tables(tables)
    table = table.set_column(0, "row_index", pa.array(range(table.num_rows), pa.int64()))
    with pa.OSFile(str(out), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return {"candidates": table.num_rows, "chunks": len(tables)}


PEAK_RSS = """
def peak_rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""

CHILD_OURS = (
    PEAK_RSS
    + """
import json, sys, time
from audits.leaks import audit_leaks
from pairstore.store.store import open_store
store = open_store(sys.argv[1], read_only=True)
t = time.perf_counter()
report = audit_leaks(store, "judge34", [sys.argv[2]])
seconds = time.perf_counter() - t
f = report.files[0]
print(json.dumps({"rows": f.rows, "leaked": f.leaked_ids, "near": f.near_ids, "hits": len(f.hits),
                  "seconds": seconds, "rss_mb": peak_rss_mb()}))
"""
)

CHILD_BASELINE = (
    PEAK_RSS
    + """
import json, sys, time
import pyarrow as pa, pyarrow.parquet as pq
from pairstore.holdout.matching import members_in_rows
from pairstore.store.store import open_store
store = open_store(sys.argv[1], read_only=True)
t = time.perf_counter()
table = pq.read_table(sys.argv[2])
read_s = time.perf_counter() - t
cands = pa.ipc.open_file(pa.memory_map(sys.argv[3])).read_all()
t = time.perf_counter()
found = members_in_rows(store, cands, set_name="judge34")
match_s = time.perf_counter() - t
print(json.dumps({"rows": table.num_rows, "candidates": cands.num_rows, "hits": len(found.hits),
                  "members": sorted({h.item_id for h in found.hits}), "read_s": read_s, "match_s": match_s,
                  "rss_mb": peak_rss_mb()}))
"""
)


def contenders(py: str, db: Path, file: str, cands: Path, before: str | None) -> list[Contender]:
    env = {"PAIRSTORE_QUIET": "1", "PYTHONPATH": str(ROOT)}
    out = [
        Contender("ours: audit leaks", [py, "-c", CHILD_OURS, str(db), file], env=env, cwd=str(ROOT)),
        Contender(
            "baseline: pyarrow read + matching",
            [py, "-c", CHILD_BASELINE, str(db), file, str(cands)],
            env=env,
        ),
    ]
    if before:
        out.append(
            Contender(
                "before: audit leaks",
                [py, "-c", CHILD_OURS, str(db), file],
                env={**env, "PYTHONPATH": before},
            )
        )
    return out


def prepare(work: Path, rows: int, name: str, candidates: bool, grow_from: str | None = None) -> dict:
    """Build the file (and the store, and the baseline's candidates) in a child process: the parent stays
    small, so the contenders it starts do not inherit its peak memory in their ru_maxrss."""
    argv = [sys.executable, __file__, "--prepare", name, "--rows", str(rows), "--work", str(work)]
    argv += ["--candidates"] if candidates else []
    argv += ["--grow-from", grow_from] if grow_from else []
    out = subprocess.run(argv, check=True, stdout=subprocess.PIPE)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=FULL_ROWS)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--before", default=None, help="A checkout of the code before the rewrite (its audit_leaks)."
    )
    ap.add_argument("--memory-rows", type=int, default=0, help="Also ours alone on a file of this many rows.")
    ap.add_argument("--work", default=str(BENCH / "_work" / "leaks"))
    ap.add_argument("--keep", action="store_true", help="Keep the work folder.")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="Reuse the file, store and candidates a --keep run left in --work.",
    )
    ap.add_argument("--prepare", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--candidates", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--grow-from", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work)
    if args.prepare:
        t = time.perf_counter()
        if args.grow_from:
            info = grow(Path(args.grow_from), work / args.prepare, args.rows)
        else:
            info = build(work, args.rows, args.prepare)
        info["build_s"] = time.perf_counter() - t
        if args.candidates:
            info.update(write_candidates(work / "store.duckdb", info["path"], work / "candidates.arrow"))
        print(json.dumps(info))
        return
    py = sys.executable
    load0 = os.getloadavg()[0]
    saved = work / "prepared.json"
    if args.reuse and saved.exists() and json.loads(saved.read_text())["asked_rows"] == args.rows:
        info = json.loads(saved.read_text())
    else:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        info = prepare(work, args.rows, "mixture.parquet", True)
        saved.write_text(json.dumps({**info, "asked_rows": args.rows}))
    print(
        f"built {info['rows']:,} rows ({info['file_mb']:.0f} MB) in {info['build_s']:.0f} s; "
        f"{info['candidates']:,} distinct candidates",
        flush=True,
    )
    cands = work / "candidates.arrow"
    runs = run_interleaved(
        contenders(py, work / "store.duckdb", info["path"], cands, args.before), rounds=args.runs
    )
    stats = summarize(runs)
    memory = None
    if args.memory_rows:
        big = prepare(work, args.memory_rows, "big.parquet", False, grow_from=info["path"])
        run = run_once(
            Contender(
                "ours, large file",
                [py, "-c", CHILD_OURS, str(work / "store.duckdb"), big["path"]],
                env={"PAIRSTORE_QUIET": "1", "PYTHONPATH": str(ROOT)},
                cwd=str(ROOT),
            )
        )
        memory = (big, run, json.loads(run.stdout))
    load1 = os.getloadavg()[0]
    write_results(args, info, runs, stats, memory, (load0, load1))
    if memory:
        os.remove(memory[0]["path"])
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def write_results(
    args: argparse.Namespace,
    info: dict,
    runs: list,
    stats: dict,
    memory: tuple | None,
    loads: tuple[float, float],
) -> None:
    from pairstore.files import atomic_write_text

    ours, base = "ours: audit leaks", "baseline: pyarrow read + matching"
    o = [json.loads(r.stdout) for r in runs if r.name == ours]
    b = [json.loads(r.stdout) for r in runs if r.name == base]
    cmd = (
        ".venv/bin/python bench/bench_leaks.py"
        + "".join(
            f" --{k.replace('_', '-')} {v}"
            for k, v in (("rows", args.rows), ("runs", args.runs))
            if not (k == "rows" and v == FULL_ROWS) and not (k == "runs" and v == 3)
        )
        + (f" --before {args.before}" if args.before else "")
        + (f" --memory-rows {args.memory_rows}" if args.memory_rows else "")
        + (f" --work {args.work} --reuse" if args.reuse else "")
        + (" --keep" if args.keep else "")
    )
    lines = [
        "## Leak audit: `audit leaks` on a large mixture file vs a pyarrow read plus the gate's matching",
        "",
        f"Command: `{cmd}`  ",
        f"Machine: {os.cpu_count()} cores ({cpu_model()}), {ram_text()}, Python {platform.python_version()}; "
        f"load average {loads[0]:.1f} at the start, {loads[1]:.1f} at the end ({priority_text()}).  ",
        f"File: {info['rows']:,} rows ({info['pairs']:,} synthetic pairs, loop-fix limit + battle x12 + "
        f"self-repair, an export's columns, zstd parquet of {info['file_mb']:,.0f} MB, "
        f"{info['text_mb']:,.0f} MB of prompt and answer text); built in {info['build_s']:.0f} s. "
        f"{info['candidates']:,} distinct candidates (prompts, other strings, ids) of the file's strings; "
        f"ours matched them in {info['chunks']} chunks, the baseline in one call.",
        "",
        "| contender | runs | wall s, median [range] | CPU s, median [range] | peak RSS MB (highest) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in stats.values():
        (w0, w1), (c0, c1) = s.wall_range, s.cpu_range
        lines.append(
            f"| {s.name} | {len(s.runs)} | {s.median_wall:.1f} [{w0:.1f}-{w1:.1f}] | "
            f"{s.median_cpu:.1f} [{c0:.1f}-{c1:.1f}] | {s.max_rss_mb:,.0f} |"
        )
    cpu_r = ratios(runs, ours, base, "cpu_s")
    wall_r = ratios(runs, ours, base, "wall_s")
    read_s = statistics.median(x["read_s"] for x in b)
    match_s = statistics.median(x["match_s"] for x in b)
    found = o[0]["leaked"] + o[0]["near"]
    lines += [
        "",
        f"Ours / baseline, round by round: CPU {ratio_text(cpu_r)}, wall {ratio_text(wall_r)} "
        "(goal: at most 2x).",
        f"Peak memory the children measured themselves (VmHWM): ours {max(x['rss_mb'] for x in o):,.0f} MB, "
        f"the baseline {max(x['rss_mb'] for x in b):,.0f} MB.",
        f"Inside the baseline: the pyarrow read took {read_s:.1f} s and the matching {match_s:.1f} s "
        "(medians, wall).",
        f"Both found the same held-out battles: ours {found} in {o[0]['hits']} rows, the baseline "
        f"{b[0]['members']} in {b[0]['hits']} distinct candidates (the battle pairs of {LEAKED} held-out "
        "battles are in the mixture, x12).",
    ]
    if args.before:
        bf = ratios(runs, "before: audit leaks", base, "cpu_s")
        lines.append(f"The audit before this rewrite / baseline: CPU {ratio_text(bf)}.")
    if memory:
        big, run, out = memory
        lines += [
            "",
            f"Memory: ours alone on {big['rows']:,} rows (the file above written {big['copies']} times, each "
            f"copy's messages and pair ids changed: {big['file_mb']:,.0f} MB zstd parquet, "
            f"{big['text_mb']:,.0f} MB of text): peak RSS {out['rss_mb']:,.0f} MB (goal: at most "
            f"1,500 MB at 10M rows), wall {run.wall_s:.0f} s, CPU {run.cpu_s:.0f} s; found "
            f"{out['leaked'] + out['near']} in {out['hits']} rows.",
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    name = "leaks.md" if args.rows == FULL_ROWS else f"leaks-{args.rows}.md"
    atomic_write_text(BENCH / "results" / name, text)


if __name__ == "__main__":
    main()
