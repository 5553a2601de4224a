"""Export speed and memory: `pairstore export` vs Hugging Face datasets vs a plain DuckDB
COPY, and the fuzzy gate.

    .venv/bin/python bench/bench_export.py                  # full size: 1,000,000 pairs, ~2.0M mixture rows
    .venv/bin/python bench/bench_export.py --scale 0.05     # a quick run at 5%

A synthetic store of 1,000,000 pairs (about 1.7 KB of text per pair: 50%
loopfix with task keys and templated prompts, 11% battle, 39% self_repair) is
built with DuckDB SQL. The mixture: loopfix limit 300k + battle x12 minus a
34-member holdout + self_repair all (about 2.0M rows). Each contender runs in
its own subprocess, timed from the parent (wall) and reporting its own peak
RSS:

- ours: pairstore.export.run.export_round (plan in SQL, the full holdout gate,
  streamed zstd parquet, evidence, exports/export_rows registry);
- datasets: the same pairs as per-source parquet files, then load_dataset,
  shuffle+select (limit), filter (holdout), concatenate (x12), to_parquet;
  no gate;
- duckdb COPY: the same rows with one COPY statement; no gate, no registry.

The loop-fix pairs come with the generated tasks they were mined from (rows of
`tasks` with the same task key and match key), as in a real store, so the gate
spares them from text matching. The export child also times the gate itself
(pairstore.export.gate.run_gate), to report its share of the export.

Then the text matching of the gate alone (pairstore.holdout.matching.members_in_rows:
normalized exact keys, 3-gram prefilter, sentence, embedded and near-copy scoring)
over every text of all pairs (prompt, chosen, rejected), task keys ignored,
against the 34 holdout members and against 3,000 eval prompts registered as
references; and `pairstore audit gate` (audits.gate_audit) on 1,000 members.
The export reads every text of a row too (answers included), as the gate does.
Writes bench/results/export.md and deletes the work folder unless --keep.
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
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import cpu_model, priority_text, ram_text  # noqa: E402

from pairstore.files import atomic_write_text  # noqa: E402

PY = sys.executable
TEMPLATES = [
    "Please answer the following question carefully and put the final answer on the last line:",
    "Count carefully and give the final answer as 'Final answer: N'.",
    "Solve step by step, then state the result on its own line:",
    "Here is a short exercise. Work it out and answer with a single number:",
]
# The datasets time quoted for this mixture "on these machines" when the goal was set, set beside ours.
ISSUE_DATASETS_S = 126
HOLDOUT_WHERE = (
    "pair_id NOT IN (SELECT o.pair_id FROM pair_origins o JOIN holdout h ON h.item_id = o.origin_id "
    "AND h.removed_at IS NULL)"
)


def words_sql(n: str, salt: int) -> str:
    return (
        f"array_to_string(list_transform(range({n}), lambda j: v[1 + (hash(i, j, {salt}) % 8000)::INTEGER]), "
        "' ')"
    )


def build_store(db: Path, n: int, limit: int) -> dict:
    """The synthetic store, its holdout, the recipe and 3,000 eval prompts (registered
    after the export runs)."""
    from pairstore.keys import match_text
    from pairstore.rounds.recipes import add_round
    from pairstore.store.store import open_store

    store = open_store(db)
    con = store.con
    con.execute(
        "CREATE TEMP TABLE vocab AS SELECT list(substr(md5(i::VARCHAR), 1 + (i % 7)::INTEGER, "
        "3 + (i % 6)::INTEGER) ORDER BY i) AS v FROM range(8000) t(i)"
    )
    tmpl = "[" + ", ".join("'" + t.replace("'", "''") + "'" for t in TEMPLATES) + "]"
    con.execute(f"""
        INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, family, miner, miner_version,
                           match_key, task_key)
        SELECT md5(i::VARCHAR || ':pair'), 'dpo', [{{'role': 'user', 'content': prompt}}],
               {words_sql("104", 2)}, {words_sql("92", 3)}, source,
               CASE source WHEN 'loopfix' THEN 'letter_count' WHEN 'self_repair' THEN 'math' ELSE 'chat' END,
               'bench', '1', md5(prompt), CASE WHEN source = 'loopfix' THEN 'bench:' || i::VARCHAR END
        FROM (SELECT i, v, CASE WHEN i % 100 < 50 THEN 'loopfix' WHEN i % 100 < 61 THEN 'battle'
                                ELSE 'self_repair' END AS source,
                     CASE WHEN i % 100 < 50 THEN {tmpl}[1 + (i % 4)::INTEGER] || ' ' || {words_sql("52", 1)}
                          WHEN i % 100 < 61 THEN {words_sql("64", 1)}
                          ELSE 'Solve: ' || {words_sql("63", 1)} END AS prompt
              FROM range({n}) t(i), vocab)""")
    # The generated tasks behind the loop-fix pairs (a real store has them; the gate spares such rows).
    con.execute("""INSERT INTO tasks (task_id, family, task_key, prompt, gold, chosen, params, phrasing, seed,
                                      match_key)
                   SELECT pair_id, 'letter_count', task_key, prompt[1].content, '0', \
chosen, '{}', 0, 0, match_key
                   FROM pairs WHERE source = 'loopfix'""")
    con.execute("""INSERT INTO pair_origins (pair_id, origin_kind, origin_id, rule, miner)
                   SELECT pair_id, 'battle', 'bb' || rowid::VARCHAR, 'bench', 'bench' FROM pairs
                   WHERE source = 'battle'""")
    held = con.execute("""SELECT o.origin_id, p.match_key, p.prompt[1].content FROM pairs p
                          JOIN pair_origins o USING (pair_id) ORDER BY p.rowid LIMIT 34""").fetchall()
    for item_id, key, text in held:
        con.execute(
            "INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text) "
            "VALUES ('judge34', ?, 'battle', ?, ?)",
            [item_id, key, match_text(text)],
        )
    recipe = db.parent / "bench.toml"
    recipe.write_text(
        textwrap.dedent(f"""\
        name = "bench"
        kind = "dpo"
        parent = "base"
        seed = 12076
        [[mix]]
        source = "loopfix"
        limit = {limit}
        [[mix]]
        source = "battle"
        where = "{HOLDOUT_WHERE}"
        upsample = 12
        [[mix]]
        source = "self_repair"
        [train]
        beta = 0.1
        sft_weight = 0.7
        lora_rank = 64
        lora_alpha = 128
        lora_dropout = 0.05
        target_modules = "all-linear"
        learning_rate = 1e-6
        lr_scheduler = "cosine"
        warmup_ratio = 0.1
        max_steps = 250
        global_batch = 32
        per_device_batch = 1
        max_length = 2048
        """)
    )
    (db.parent / "base.toml").write_text('name = "base"\nkind = "base"\n')
    add_round(store, db.parent / "base.toml")
    add_round(store, recipe)
    stats = store.one(
        "SELECT count(*), avg(length(prompt[1].content) + length(chosen) + length(rejected)) FROM pairs"
    )
    by_source = dict(con.execute("SELECT source, count(*) FROM pairs GROUP BY ALL ORDER BY 1").fetchall())
    # per-source parquet files for the datasets baseline (not timed): the data it starts from
    for src in ("loopfix", "battle", "self_repair"):
        con.execute(f"""COPY (SELECT p.prompt[1].content AS prompt, p.chosen, p.rejected, p.pair_id, p.source,
                                     p.family, o.origin_id
                              FROM pairs p LEFT JOIN pair_origins o USING (pair_id)
                              WHERE p.source = '{src}' ORDER BY p.rowid)
                        TO '{db.parent / f"src_{src}.parquet"}' (FORMAT parquet)""")
    store.close()
    return {
        "pairs": stats[0],
        "avg_text_bytes": round(stats[1]),
        "by_source": by_source,
        "held": [h[0] for h in held],
    }


def add_gate_audit_members(db: Path, count: int) -> None:
    """`count` members of set members1000: the prompts of battle pairs with their chosen answers."""
    from pairstore.keys import match_text
    from pairstore.store.store import open_store

    store = open_store(db)
    con = store.con
    rows = con.execute(
        f"SELECT o.origin_id, p.prompt[1].content FROM pairs p JOIN pair_origins o USING (pair_id) "
        f"ORDER BY p.rowid DESC LIMIT {count}"
    ).fetchall()
    con.execute("INSERT INTO holdout_sets (set_name) VALUES ('members1000')")
    for item_id, text in rows:
        con.execute(
            "INSERT INTO holdout (set_name, item_id, item_kind, match_key, match_text) "
            "VALUES ('members1000', ?, 'prompt', md5(?), ?)",
            [item_id, text, match_text(text)],
        )
    store.close()


def add_eval_prompts(db: Path, count: int) -> None:
    from pairstore.store.store import open_store

    store = open_store(db)
    store.con.execute(
        "CREATE TEMP TABLE vocab AS SELECT list(substr(md5(i::VARCHAR), 1 + (i % 7)::INTEGER, "
        "3 + (i % 6)::INTEGER) ORDER BY i) AS v FROM range(8000) t(i)"
    )
    store.con.execute(f"""
        INSERT INTO eval_items (suite, item_id, kind, prompt, match_key)
        SELECT 'bench', 'e' || i::VARCHAR, 'prompt', [{{'role': 'user', 'content': t}}], md5(t)
        FROM (SELECT i, {words_sql("64", 9)} AS t FROM range({count}) r(i), vocab)""")
    store.close()


# Peak resident memory of the child itself: VmHWM (ru_maxrss would carry the parent's peak across fork+exec).
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
from pairstore.export import run as export
from pairstore.store.store import open_store
gate_s, gate_rss = [], []
run_gate = export.run_gate
def timed_gate(*args, **kwargs):
    t = time.perf_counter()
    try:
        return run_gate(*args, **kwargs)
    finally:
        gate_s.append(time.perf_counter() - t)
        gate_rss.append(peak_rss_mb())
export.run_gate = timed_gate
store = open_store(sys.argv[1])
t0 = time.perf_counter()
r = export.export_round(store, "bench", sys.argv[2])
total = time.perf_counter() - t0
store.close()
print(json.dumps({"rows": r.files["dpo"].rows, "sha256": r.files["dpo"].sha256,
                  "pairs_checked": r.gate.pairs_checked, "fuzzy_scored": r.gate.fuzzy_pairs_scored,
                  "gate_s": gate_s[0], "export_s": total, "rss_after_gate_mb": gate_rss[0], \
"rss_mb": peak_rss_mb()}))
"""
)

CHILD_DATASETS = (
    PEAK_RSS
    + """
import json, os, sys, time
t0 = time.perf_counter()
steps = {}
def step(name):
    global t0
    steps[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
work, limit, held = sys.argv[1], int(sys.argv[2]), set(json.loads(sys.argv[3]))
os.environ["HF_DATASETS_CACHE"] = os.path.join(work, "hf_cache")
from datasets import concatenate_datasets, load_dataset
files = {s: os.path.join(work, f"src_{s}.parquet") for s in ("loopfix", "battle", "self_repair")}
ds = load_dataset("parquet", data_files=files, cache_dir=os.path.join(work, "hf_cache"))
step("import + load")
loop = ds["loopfix"].shuffle(seed=12076).select(range(min(limit, len(ds["loopfix"]))))
battle = ds["battle"].filter(lambda b: [o not in held for o in b["origin_id"]], batched=True)
mix = concatenate_datasets([loop] + [battle] * 12 + [ds["self_repair"]])
mix = mix.remove_columns(["origin_id"])
step("shuffle, select, filter, concatenate")
mix.to_parquet(os.path.join(work, "datasets_mix.parquet"))
step("to_parquet")
print(json.dumps({"rows": len(mix), "rss_mb": peak_rss_mb(), "steps": steps}))
"""
)

CHILD_COPY = (
    PEAK_RSS
    + """
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
limit, out = int(sys.argv[2]), sys.argv[3]
# Spill to the work folder under a bound rather than grow until the machine's memory runs out (an
# unbounded COPY of the full-size mixture was killed on a shared machine).
con.execute(f"SET temp_directory = '{sys.argv[5]}'")
con.execute("SET memory_limit = '4GB'")
con.execute(f'''COPY (
    (SELECT prompt, chosen, rejected, pair_id, source, family FROM pairs WHERE source = 'loopfix'
     ORDER BY hash(12076, pair_id) LIMIT {limit})
    UNION ALL
    (SELECT prompt, chosen, rejected, pair_id, source, family FROM pairs, range(12) c(k)
     WHERE source = 'battle' AND {sys.argv[4]})
    UNION ALL
    (SELECT prompt, chosen, rejected, pair_id, source, family FROM pairs WHERE source = 'self_repair')
) TO '{out}' (FORMAT parquet)''')
rows = con.execute(f"SELECT count(*) FROM '{out}'").fetchall()[0][0]
print(json.dumps({"rows": rows, "rss_mb": peak_rss_mb()}))
"""
)

CHILD_FUZZY = (
    PEAK_RSS
    + """
import json, sys, time
from pairstore.store.store import open_store
from pairstore.holdout import matching
store = open_store(sys.argv[1], read_only=True)
con = store.con
t0 = time.perf_counter()
# every pair, every text, as the gate reads it (task keys dropped, so nothing is spared)
con.execute('''CREATE TEMP TABLE cand AS
    SELECT rowid AS row_index, pair_id, []::VARCHAR[] AS origin_ids, match_key, NULL::VARCHAR AS task_key,
           prompt, [chosen, rejected] AS answers
    FROM pairs''')
build = time.perf_counter() - t0
out = {"candidates": con.execute("SELECT count(*) FROM cand").fetchall()[0][0], "build_s": build}
for label, set_name in (("34", "judge34"), ("3000", "eval:bench")):
    t = time.perf_counter()
    result = matching.members_in_rows(store, "cand", set_name=set_name)
    out[label] = {"members": sum(result.members.values()), "seconds": time.perf_counter() - t,
                  "hits": len(result.hits), "scored": result.fuzzy_pairs_scored}
out["rss_mb"] = peak_rss_mb()
print(json.dumps(out))
"""
)

CHILD_GATE_AUDIT = (
    PEAK_RSS
    + """
import json, sys, time
from audits.gate_audit import audit_gate
from pairstore.store.store import open_store
store = open_store(sys.argv[1], read_only=True)
t = time.perf_counter()
r = audit_gate(store, set_name="members1000")
seconds = time.perf_counter() - t
rows = sum(x["rows"] for x in r.recall) + sum(x["rows"] for x in r.mutations)
caught = sum(x["caught"] for x in r.recall)
refused = sum(x["refused"] for x in r.mutations)
mut_rows = sum(x["rows"] for x in r.mutations)
print(json.dumps({"members": r.members, "seconds": seconds, "rows": rows, "caught": caught,
                  "transform_rows": rows - mut_rows, "mutation_rows": mut_rows, "refused": refused,
                  "rss_mb": peak_rss_mb()}))
"""
)


CHILD_BUILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
from bench_export import build_store
print(json.dumps(build_store(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
"""

CHILD_MEMBERS = """
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
from bench_export import add_gate_audit_members
add_gate_audit_members(Path(sys.argv[1]), int(sys.argv[2]))
print(json.dumps({}))
"""

CHILD_EVAL = """
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
from bench_export import add_eval_prompts
add_eval_prompts(Path(sys.argv[1]), int(sys.argv[2]))
print(json.dumps({}))
"""


def run_child(code: str, *args) -> tuple[float, dict]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    proc = subprocess.run(
        [PY, "-c", code, *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def machine() -> str:
    return f"{os.cpu_count()} cores ({cpu_model()}), {ram_text()} RAM, Python {platform.python_version()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--scale", type=float, default=1.0, help="fraction of the 1,000,000-pair store (default 1)"
    )
    ap.add_argument("--runs", type=int, default=1, help="runs per contender; the median is reported")
    ap.add_argument("--work", default=str(ROOT / "bench" / "_work" / "export"), help="scratch folder")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    ap.add_argument(
        "--skip-datasets", action="store_true", help="leave out the Hugging Face datasets baseline"
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "export.md"))
    args = ap.parse_args()

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    n = int(1_000_000 * args.scale)
    limit = int(300_000 * args.scale)
    load0 = os.getloadavg()
    try:
        build_s, info = run_child(CHILD_BUILD, work / "bench.duckdb", n, limit)
        print(
            f"store: {info['pairs']:,} pairs, {info['avg_text_bytes']} bytes of text per pair, "
            f"built in {build_s:.1f} s",
            flush=True,
        )
        results: dict[str, list] = {"ours": [], "datasets": [], "copy": []}
        for run in range(args.runs):
            out_dir = work / f"out{run}"
            results["ours"].append(run_child(CHILD_OURS, work / "bench.duckdb", out_dir))
            print("ours", results["ours"][-1], flush=True)
            results["copy"].append(
                run_child(
                    CHILD_COPY,
                    work / "bench.duckdb",
                    limit,
                    work / "copy.parquet",
                    HOLDOUT_WHERE,
                    work / "duckdb_tmp",
                )
            )
            print("copy", results["copy"][-1], flush=True)
            if not args.skip_datasets:
                results["datasets"].append(run_child(CHILD_DATASETS, work, limit, json.dumps(info["held"])))
                print("datasets", results["datasets"][-1], flush=True)
                shutil.rmtree(work / "hf_cache", ignore_errors=True)
            shutil.rmtree(out_dir, ignore_errors=True)
        run_child(CHILD_EVAL, work / "bench.duckdb", 3000)
        fuzzy_wall, fuzzy = run_child(CHILD_FUZZY, work / "bench.duckdb")
        print("fuzzy", fuzzy, flush=True)
        run_child(CHILD_MEMBERS, work / "bench.duckdb", 1000)
        _, gaudit = run_child(CHILD_GATE_AUDIT, work / "bench.duckdb")
        print("audit gate", gaudit, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()

    def med(name):
        runs = results[name]
        if not runs:
            return None
        return (
            statistics.median(w for w, _ in runs),
            statistics.median(r["rss_mb"] for _, r in runs),
            runs[0][1]["rows"],
        )

    ours, copy, hf = med("ours"), med("copy"), med("datasets")
    run_ratios = ", ".join(f"{o[0] / c[0]:.2f}x" for o, c in zip(results["ours"], results["copy"]))
    peak_max = max(r["rss_mb"] for _, r in results["ours"])
    lines = [
        "## Export: pairstore vs Hugging Face datasets vs DuckDB COPY",
        "",
        "Command: `.venv/bin/python bench/bench_export.py"
        f"{'' if args.scale == 1 else f' --scale {args.scale:g}'}"
        f"{'' if args.runs == 1 else f' --runs {args.runs}'}"
        f"{' --skip-datasets' if args.skip_datasets else ''}`  ",
        f"Machine: {machine()}; shared with other engineers' jobs while measuring (load average "
        f"{load0[0]:.1f} at the start, {load1[0]:.1f} at the end; this run's scheduling: "
        f"{priority_text() or 'unknown'}, the contenders alike), so absolute times are noisy.  ",
        f"Store: {info['pairs']:,} synthetic pairs "
        f"({', '.join(f'{k} {v:,}' for k, v in info['by_source'].items())}), "
        f"{info['avg_text_bytes']:,} bytes of text per pair on average; "
        f"built with DuckDB SQL in {build_s:.0f} s.  ",
        f"Mixture: loopfix limit {limit:,} + battle x12 minus a 34-member holdout + self_repair all = "
        f"{ours[2]:,} rows. Each contender in its own subprocess; wall time from the parent, peak RSS "
        f"(VmHWM) from the child; median of {args.runs} run(s).",
        "",
        "| contender | what it does | wall s | peak RSS MB | vs datasets |",
        "| --- | --- | --- | --- | --- |",
    ]
    rows = [
        (
            "pairstore export",
            "plan in SQL, holdout gate (ids, keys, task keys, fuzzy, benchmarks), "
            "zstd parquet, evidence, export_rows",
            ours,
        )
    ]
    if hf:
        rows.append(
            ("HF datasets", "load_dataset, shuffle+select, filter, concatenate, to_parquet; no gate", hf)
        )
    rows.append(("DuckDB COPY", "one COPY of the same rows; no gate, no registry", copy))
    for name, what, m in rows:
        ratio = f"{hf[0] / m[0]:.1f}x" if hf else "-"
        lines.append(f"| {name} | {what} | {m[0]:.1f} | {m[1]:,.0f} | {ratio} |")
    r0 = results["ours"][0][1]
    if hf:
        runs = [r for _, r in results["datasets"]]
        steps = {k: statistics.median(r["steps"][k] for r in runs) for k in runs[0]["steps"]}
        lines += [
            "",
            "Where the datasets baseline spends its time (median per step): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in steps.items())
            + "."
            + (
                ""
                if args.scale != 1
                else f" The issue quotes about {ISSUE_DATASETS_S} s for datasets on these machines; "
                "measured against that figure instead of this run's, "
                f"the export is {ISSUE_DATASETS_S / ours[0]:.1f}x faster "
                f"({'meets' if ISSUE_DATASETS_S / ours[0] >= 5 else 'short of'} the 5x goal)."
            ),
        ]
    lines += [
        "",
        f"The export's gate checked {r0['pairs_checked']:,} distinct pairs of the mixture (the battle copies "
        f"share one check) and scored {r0['fuzzy_scored']:,} (row, member) pairs with rapidfuzz after the "
        f"prefilter. The gate took {statistics.median(r['gate_s'] for _, r in results['ours']):.1f} s of the "
        f"export's {statistics.median(r['export_s'] for _, r in results['ours']):.1f} s inside the child "
        f"({100 * statistics.median(r['gate_s'] / r['export_s'] for _, r in results['ours']):.0f}%; "
        "the loop-fix pairs, generated tasks of the store, are spared from its text checks "
        "but still compared by key); "
        f"the child's peak memory by the end of the gate was "
        f"{statistics.median(r['rss_after_gate_mb'] for _, r in results['ours']):,.0f} MB.",
        "",
        "### The text matching of the gate alone",
        "",
        f"All {fuzzy['candidates']:,} pairs, every text (prompt, chosen, rejected; task keys dropped, "
        f"so no row is spared); candidate table built in {fuzzy['build_s']:.1f} s. "
        "pairstore.holdout.matching.members_in_rows: "
        "normalized exact keys, word 3-gram prefilter (streamed in chunks), sentence, embedded and near-copy "
        "checks on what passes.",
        "",
        "| members | seconds | (row, member) pairs scored | hits |",
        "| --- | --- | --- | --- |",
        f"| 34 holdout battles | {fuzzy['34']['seconds']:.1f} | {fuzzy['34']['scored']:,} | "
        f"{fuzzy['34']['hits']} |",
        f"| 3,000 eval prompts | {fuzzy['3000']['seconds']:.1f} | {fuzzy['3000']['scored']:,} | "
        f"{fuzzy['3000']['hits']} |",
        "",
        "### `pairstore audit gate` on 1,000 members",
        "",
        f"{gaudit['members']:,} members (prompts of the store's battle pairs, set `members1000`), "
        f"{gaudit['transform_rows']:,} disguised rows and {gaudit['mutation_rows']:,} near-neighbour rows "
        f"through the gate's matcher against every member: {gaudit['seconds']:.1f} s, "
        f"peak {gaudit['rss_mb']:,.0f} MB; "
        f"{gaudit['caught']:,} of {gaudit['transform_rows']:,} disguised rows found, "
        f"{gaudit['refused']:,} of "
        f"{gaudit['mutation_rows']:,} near neighbours refused.",
        "",
        f"Goals: the export with the full gate (every text of a row, answers included) at most 2x the bare "
        f"COPY of the same rows "
        f"({ours[0] / copy[0]:.2f}x: {'met' if ours[0] <= 2 * copy[0] else 'NOT met'}; run by run, each "
        f"export against the COPY that followed it: {run_ratios}), "
        f"peak memory < 1.5 GB ({ours[1]:,.0f} MB: {'met' if ours[1] < 1536 else 'NOT met'}; the highest of "
        f"the runs {peak_max:,.0f} MB); the gate alone "
        f"vs 3,000 members < 60 s ({'met' if fuzzy['3000']['seconds'] < 60 else 'NOT met'}); `audit gate` on "
        f"1,000 members < 60 s ({'met' if gaudit['seconds'] < 60 else 'NOT met'}); "
        "earlier goals: >= 5x faster than datasets "
        f"({'met' if hf and hf[0] / ours[0] >= 5 else 'not measured' if not hf else 'NOT met'}), "
        f"fuzzy vs 34 < 60 s ({'met' if fuzzy['34']['seconds'] < 60 else 'NOT met'}).",
        "",
        "The 34 held-out battles are real members of the store's `judge34` set; "
        "their battle pairs are removed "
        "by the recipe's `where` (so the gate passes) and the datasets baseline filters them by origin id. "
        "Synthetic text is random words from an 8,000-word vocabulary, with templated prefixes on the "
        "loop-fix prompts; match keys in the synthetic store are md5 of the prompt.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.scale == 1 or not Path(args.out).exists():
        atomic_write_text(args.out, text)


if __name__ == "__main__":
    main()
