"""The holdout gate at scale and bulk `holdout add`, before and after, beside a bare DuckDB scan.

    .venv/bin/python bench/bench_gate.py                    # full size: 100,000 members, 1,000,000 rows
    .venv/bin/python bench/bench_gate.py --scale 0.05       # a quick run at 5%
    .venv/bin/python bench/bench_gate.py --keep             # keep bench/_work/gate (the stores) for a rerun
    .venv/bin/python bench/bench_gate.py --only add --rows 1000   # holdout add of 100,000 members alone

A synthetic store (DuckDB SQL, seeded: random words of an 8,000-word vocabulary) holds MEMBERS battles,
each with a prompt of about 40 words and two answers of about 100 words, and ROWS pairs (prompt about 60
words, chosen about 100, rejected about 90). Nested holdout sets hold a quarter, half and all of the
battles; 20 rows leak a member of the smallest set (its prompt upper-cased), so the gate has hits to
find. Every contender runs in its own process (bench/contenders.py: interleaved rounds, CPU time beside
wall time, peak RSS):

- gate: pairstore.holdout.matching.members_in_rows over every text of every row (prompt, chosen,
  rejected) against one set, run by this checkout ("after") and by the commit before this work
  ("before", a temporary git worktree of --before; its store is the same data at its schema version);
- DuckDB exact scan: every text of every row lower-cased and hashed, joined with the members' texts
  (prompts and answers) hashed the same way: the same texts read by the database alone, exact copies only;
- holdout add: `holdout add --ids-file` of every battle id and `--texts-file` of as many texts, one
  transaction each, beside DuckDB inserting the same member rows (ids joined to battles, md5 keys); the
  code before this work adds a tenth of the ids (it takes milliseconds a member), reported per member.

Memory per member is the slope of peak RSS over the set sizes; CPU's growth is the slope of log CPU over
log members. Writes bench/results/gate.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from contenders import Contender, before_worktree, remove_worktree, run_interleaved, summarize  # noqa: E402
from machine import cpu_model, nproc, ram_text  # noqa: E402

PY = sys.executable
# The last commit before the gate's rework (normalization steps, versioned keys, the matcher list).
BEFORE_REF = "bf1d49a"
WORK = BENCH / "_work" / "gate"
LEAKS = 20

# Runs in a child: builds the store with only SQL and open_store, so the code before this work (its
# schema) and this checkout build the same data.
CHILD_BUILD = r"""
import sys, time
from pairstore.store.store import open_store
db, members, rows, leaks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
sizes = [int(x) for x in sys.argv[4].split(",")]
store = open_store(db)
con = store.con
con.execute("CREATE TEMP TABLE vocab AS SELECT list(substr(md5(i::VARCHAR), 1 + (i % 7)::INTEGER, "
            "3 + (i % 6)::INTEGER) ORDER BY i) AS v FROM range(8000) t(i)")
def words(n, salt):
    pick = f"v[1 + (hash(i, j, {salt}) % 8000)::INTEGER]"
    return f"array_to_string(list_transform(range({n}), lambda j: {pick}), ' ')"
t = time.time()
con.execute(f'''INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote,
                                     match_key, record_hash)
    SELECT 'b' || i::VARCHAR, [{{'role': 'user', 'content': p}}], [{words("96 + i % 9", 2)}],
           [{words("88 + i % 7", 3)}], 1, 'win', md5(p), md5(i::VARCHAR)
    FROM (SELECT i, v, {words("36 + i % 9", 1)} AS p FROM range({members}) r(i), vocab)''')
con.execute(f'''INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, miner, miner_version,
                                   match_key)
    SELECT 'p' || i::VARCHAR, 'dpo', [{{'role': 'user', 'content': p}}], {words("96 + i % 11", 5)},
           {words("86 + i % 9", 6)}, 'bench', 'bench', '1', md5(p)
    FROM (SELECT i, v, {words("56 + i % 9", 4)} AS p FROM range({rows}) r(i), vocab)''')
# A few rows leak a member of the smallest set: its prompt upper-cased.
con.execute(f'''UPDATE pairs SET prompt = [{{'role': 'user', 'content': upper(b.prompt[1].content)}}]
    FROM (SELECT *, CAST(substr(battle_id, 2) AS BIGINT) AS i FROM battles) b
    WHERE pairs.pair_id = 'p' || (b.i * 7919 % {rows})::VARCHAR AND b.i < {leaks}''')
for size in sizes:
    con.execute("INSERT INTO holdout_sets (set_name) VALUES (?)", [f"m{size}"])
    con.execute(f'''INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text)
        SELECT 'm{size}', battle_id, 'battle', match_key, prompt[1].content FROM battles
        WHERE CAST(substr(battle_id, 2) AS BIGINT) < {size}''')
con.execute("COPY (SELECT battle_id FROM battles) TO '" + db + ".ids.txt' (FORMAT csv, HEADER false)")
con.execute("COPY (SELECT 't' || battle_id AS id, own_answers[1] AS text FROM battles) TO '" + db
            + ".texts.jsonl' (FORMAT json)")
store.close()
print(f"built in {time.time() - t:.1f} s", flush=True)
"""

# Opens the store for writing once (this checkout: migrations, re-keying), outside any timing.
CHILD_OPEN = r"""
import sys, time
from pairstore.store.store import open_store
t = time.time()
open_store(sys.argv[1]).close()
print(f"opened (migrated, re-keyed) in {time.time() - t:.1f} s", flush=True)
"""

PEAK_RSS = r"""
def peak_rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""

CHILD_GATE = (
    PEAK_RSS
    + r"""
import json, sys, time
from pairstore.store.store import open_store
from pairstore.holdout.matching import members_in_rows
store = open_store(sys.argv[1], read_only=True)
store.con.execute('''CREATE TEMP VIEW rows AS
    SELECT rowid AS row_index, pair_id, []::VARCHAR[] AS origin_ids, match_key, NULL::VARCHAR AS task_key,
           prompt, [chosen, rejected] AS answers FROM pairs''')
t = time.perf_counter()
result = members_in_rows(store, "rows", set_name=sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - t, "members": sum(result.members.values()),
                  "rows": result.candidates, "hits": len({(h.item_id, h.row_index) for h in result.hits}),
                  "scored": result.fuzzy_pairs_scored, "rss_mb": peak_rss_mb()}))
"""
)

CHILD_DUCKDB = (
    PEAK_RSS
    + r"""
import json, sys, time
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
t = time.perf_counter()
hits = con.execute('''
    WITH m AS (SELECT DISTINCT hash(lower(x)) AS k FROM holdout h JOIN battles b ON b.battle_id = h.item_id,
               unnest(list_concat([b.prompt[1].content], b.own_answers, b.opponent_answers)) u(x)
               WHERE h.set_name = ?)
    SELECT count(*) FROM (SELECT unnest(list_concat(list_transform(prompt, lambda p: p.content),
                                                    [chosen, rejected])) AS t FROM pairs) r
    WHERE hash(lower(r.t)) IN (SELECT k FROM m)''', [sys.argv[2]]).fetchall()[0][0]
print(json.dumps({"seconds": time.perf_counter() - t, "hits": hits, "rss_mb": peak_rss_mb()}))
"""
)

CHILD_ADD = (
    PEAK_RSS
    + r"""
import json, shutil, sys, time
from pairstore.store.store import open_store
from pairstore.holdout import sets
db, how, path, limit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if limit:
    lines = open(path, encoding="utf-8").read().splitlines()[:limit]
    path = path + f".{limit}"
    open(path, "w", encoding="utf-8").write("\n".join(lines) + "\n")
store = open_store(db)
t = time.perf_counter()
add = sets.add_from_ids_file if how == "ids" else sets.add_from_texts_file
n = add(store, "bulk", path)
seconds = time.perf_counter() - t
log = store.scalar("SELECT count(*) FROM audit_log WHERE action = 'holdout.add'")
store.close()
print(json.dumps({"seconds": seconds, "added": n, "audit_entries": log, "rss_mb": peak_rss_mb()}))
"""
)

CHILD_ADD_DUCKDB = (
    PEAK_RSS
    + r"""
import json, sys, time
import duckdb
con = duckdb.connect(sys.argv[1])
t = time.perf_counter()
con.execute("BEGIN")
con.execute("INSERT INTO holdout_sets (set_name) VALUES ('bulk')")
con.execute('''INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text)
    SELECT 'bulk', b.battle_id, 'battle', md5(b.prompt[1].content), lower(b.prompt[1].content)
    FROM read_csv(?, header = false, columns = {'id': 'VARCHAR'}) f JOIN battles b ON b.battle_id = f.id''',
            [sys.argv[2]])
con.execute("COMMIT")
n = con.execute("SELECT count(*) FROM holdout WHERE set_name = 'bulk'").fetchall()[0][0]
print(json.dumps({"seconds": time.perf_counter() - t, "added": n, "rss_mb": peak_rss_mb()}))
"""
)


def child(code: str, *args: object, before: Path | None = None) -> Contender:
    """A contender running `code` with this checkout's pairstore, or (before=) the old worktree's."""
    argv = [PY, "-c", code, *map(str, args)]
    if before is None:
        return Contender("", argv, env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    return Contender("", argv, env={"PYTHONPATH": str(before)}, cwd="/tmp")


def named(c: Contender, name: str) -> Contender:
    return Contender(name, c.argv, c.env, c.cwd)


def run_checked(c: Contender) -> str:
    out = subprocess.run(
        list(c.argv), env=dict(os.environ, **(c.env or {})), cwd=c.cwd, text=True, capture_output=True
    )
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, c.argv[3:]))} failed:\n{out.stderr[-3000:]}")
    return out.stdout.strip()


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--before", default=BEFORE_REF, help="the commit to compare with")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip-before", action="store_true", help="no runs of the old code (a quick look)")
    ap.add_argument(
        "--only",
        choices=("gate", "add"),
        help="one half of the bench: gate only prints; add writes bench/results/gate_add.md",
    )
    ap.add_argument("--rows", type=int, help="rows of the mixture (default 1,000,000 x --scale)")
    ap.add_argument("--code", choices=("both", "before", "after"), default="both", help="whose gate runs")
    args = ap.parse_args(argv)
    members = int(100_000 * args.scale)
    rows = args.rows if args.rows is not None else int(1_000_000 * args.scale)
    sizes = [members // 4, members // 2, members]
    WORK.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    old = None if args.skip_before else before_worktree(WORK / "before-code", args.before)
    after_db, before_db = WORK / f"after-{members}-{rows}.duckdb", WORK / f"before-{members}-{rows}.duckdb"
    if not after_db.exists():
        print(
            run_checked(
                child(CHILD_BUILD, after_db, members, rows, ",".join(map(str, sizes)), LEAKS, before=old)
            )
            if old
            else run_checked(child(CHILD_BUILD, after_db, members, rows, ",".join(map(str, sizes)), LEAKS))
        )
        if old:
            shutil.copyfile(after_db, before_db)
        print(run_checked(child(CHILD_OPEN, after_db)))

    gates = [named(child(CHILD_GATE, after_db, f"m{k}"), f"gate after, {k:,} members") for k in sizes]
    if args.code == "before":
        gates = []
    if old and args.code != "after":
        gates += [
            named(child(CHILD_GATE, before_db, f"m{k}", before=old), f"gate before, {k:,} members")
            for k in sizes
        ]
    gates.append(
        named(child(CHILD_DUCKDB, after_db, f"m{members}"), f"DuckDB exact scan, {members:,} members")
    )
    gate_runs = run_interleaved(gates, rounds=args.rounds) if args.only != "add" else []
    if args.only == "gate":
        write_results(args, members, rows, sizes, load, gate_runs, [])
        return 0

    # holdout add: each run on a fresh copy of the store
    adds = []
    for how, path in (("ids", f"{after_db}.ids.txt"), ("texts", f"{after_db}.texts.jsonl")):
        copy = WORK / f"add-{how}.duckdb"
        adds.append(
            named(
                Contender(
                    "",
                    [
                        PY,
                        "-c",
                        "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])",
                        str(after_db),
                        str(copy),
                    ],
                ),
                "copy",
            )
        )
        adds.append(
            named(child(CHILD_ADD, copy, how, path, 0), f"holdout add --{how}-file, {members:,} members")
        )
    copy = WORK / "add-duckdb.duckdb"
    adds.append(
        named(
            Contender(
                "",
                [
                    PY,
                    "-c",
                    "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])",
                    str(after_db),
                    str(copy),
                ],
            ),
            "copy",
        )
    )
    adds.append(
        named(child(CHILD_ADD_DUCKDB, copy, f"{after_db}.ids.txt"), f"DuckDB INSERT, {members:,} members")
    )
    if old:
        copy = WORK / "add-before.duckdb"
        adds.append(
            named(
                Contender(
                    "",
                    [
                        PY,
                        "-c",
                        "import shutil,sys; shutil.copyfile(sys.argv[1], sys.argv[2])",
                        str(before_db),
                        str(copy),
                    ],
                ),
                "copy",
            )
        )
        adds.append(
            named(
                child(CHILD_ADD, copy, "ids", f"{after_db}.ids.txt", members // 10, before=old),
                f"holdout add --ids-file before, {members // 10:,} members",
            )
        )
    add_runs = [r for r in run_interleaved(adds, rounds=1) if r.name != "copy"]
    write_results(args, members, rows, sizes, load, gate_runs, add_runs)
    if not args.keep:
        if old:
            remove_worktree(old)
        shutil.rmtree(WORK, ignore_errors=True)
    return 0


def command_args(args: argparse.Namespace) -> str:
    """The arguments of this run that differ from the full-size defaults, as typed."""
    out = ""
    if args.scale != 1:
        out += f" --scale {args.scale}"
    if args.rounds != 2:
        out += f" --rounds {args.rounds}"
    if args.rows is not None:
        out += f" --rows {args.rows}"
    if args.only:
        out += f" --only {args.only}"
    if args.skip_before:
        out += " --skip-before"
    elif args.before != BEFORE_REF:
        out += f" --before {args.before}"
    return out


def write_results(args, members, rows, sizes, load, gate_runs, add_runs) -> None:
    from pairstore.files import atomic_write_text

    stats = summarize(gate_runs)
    info = {r.name: json.loads(r.stdout.strip().splitlines()[-1]) for r in gate_runs}
    for r in gate_runs:
        print(r.name, r.stdout.strip().splitlines()[-1])
    lines = [
        "## The holdout gate at scale and bulk `holdout add`",
        "",
        f"Command: `python bench/bench_gate.py{command_args(args)}`",
        f"Machine: nproc {nproc()}; {cpu_model()}; RAM {ram_text()}; load average at start "
        f"{' '.join(f'{x:.2f}' for x in load)}; Python {platform.python_version()}. Shared with other "
        "jobs, so wall times are noisy; CPU time is steadier.",
        "",
        f"Data (invented, seeded): {members:,} held-out battles (prompt about 40 words, two answers of "
        f"about 100), {rows:,} rows (prompt about 60 words, chosen about 100, rejected about 90); {LEAKS} "
        "rows leak a member (upper-cased). Each contender in its own process; interleaved rounds "
        f"({args.rounds}); the code before this work is commit `{args.before}`.",
        "",
    ]
    if gate_runs:
        lines += [
            "| contender | runs | wall s, median | CPU s, median | peak RSS MB | hits found |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
    for name, s in stats.items():
        hits = info[name].get("hits")
        lines.append(
            f"| {name} | {len(s.runs)} | {s.median_wall:.1f} | {s.median_cpu:.1f} | "
            f"{s.max_rss_mb:,.0f} | {hits} |"
        )
    lines.append("")
    for label in ("after", "before"):
        series = [(k, stats.get(f"gate {label}, {k:,} members")) for k in sizes]
        series = [(k, s) for k, s in series if s is not None]
        if len(series) < 2:
            continue
        ks = [k for k, _ in series]
        per_member_kb = slope(ks, [s.max_rss_mb for _, s in series]) * 1024
        growth = slope([math.log(k) for k in ks], [math.log(s.median_cpu) for _, s in series])
        lines.append(
            f"- {label}: memory per member {per_member_kb:.1f} KB (slope of peak RSS over "
            f"{', '.join(f'{k:,}' for k in ks)} members); CPU grows as members^{growth:.2f}."
        )
    lines += [
        "" if gate_runs else "Each `holdout add` runs on a fresh copy of the store, in one transaction.",
        "",
        "| holdout add | wall s | CPU s | per member | audit-log entries | peak RSS MB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in add_runs:
        out = json.loads(r.stdout.strip().splitlines()[-1])
        n = out["added"]
        lines.append(
            f"| {r.name} | {r.wall_s:.1f} | {r.cpu_s:.1f} | {1000 * out['seconds'] / max(n, 1):.3f} ms | "
            f"{out.get('audit_entries', '-')} | {r.peak_rss_mb:,.0f} |"
        )
    if args.only == "add":
        lines[0] = "## Bulk `holdout add`"
    elif args.scale != 1 or args.rows is not None:
        lines += [
            "",
            f"Measured with {members:,} members and {rows:,} rows, not the full 100,000 x "
            "1,000,000: the shared machine was too loaded for the full size in this run; "
            "`python bench/bench_gate.py` runs it.",
        ]
    lines += [
        "",
        "On a loaded machine wall time includes waiting for a core (see the load average above); the CPU "
        "column is the work itself, the whole process (start, store open, the add or the gate).",
        "",
        "Goals: `holdout add` of 100,000 members under 10 s on 2 cores, one transaction, one audit-log "
        "entry per member; the gate's memory per member at most half the code before this work's.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.only != "gate":
        atomic_write_text(BENCH / "results" / ("gate_add.md" if args.only else "gate.md"), text)
    else:
        print("(--only gate: bench/results/gate.md left as it is)")


if __name__ == "__main__":
    raise SystemExit(main())
