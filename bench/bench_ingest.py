"""Bulk ingest of generations, battles, pairs, problems and eval results: `pairstore ingest ...` vs DuckDB.

    .venv/bin/python bench/bench_ingest.py                 # full size: 1,000,000 generations, 200,000
                                                           # battles, pairs, problems, evals and
                                                           # lm-eval records
    .venv/bin/python bench/bench_ingest.py --scale 0.05    # a quick run at 5%
    .venv/bin/python bench/bench_ingest.py --tables generations

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

Battles (native single-turn records: prompt, both answers, vote, category, models, time) and pairs
(the plain layout: prompt, chosen, rejected, an id) the same way: ours is `ingest battles` / `ingest
pairs` (Arrow batches and the shared vectorized checks, each batch's rows built as Arrow columns; in
Python only the match keys, each batch's prompts normalized together (normalize.word_texts), and the
xxh3 content ids over JSON written out per column; then the insert in SQL, the one writer of the
table); DuckDB's is `INSERT ... SELECT ... FROM read_json(file)` with md5 keys and no checks. They run
at a fifth of the generations' size (--table-rows).

Problems (a GSM8K train file: question, answer ending in `#### <n>`) and evals (the simple JSONL form:
item_id, correct, score, extracted_answer, gold, an output of about 300 characters) at the same size:
ours is `ingest problems` / `ingest evals` (Arrow batches and the shared vectorized checks; per row in
Python only the gold after `####`, the question's content id and match key, and the repetition scanner
over each output, audits.loops.scan_many, as the CLI runs it); DuckDB's is `INSERT ... SELECT ... FROM
read_json(file)` with md5 keys, the gold cut out in SQL, the output's character count for its length
and no scanner, no checks, no log. lm-eval is `ingest evals --format lm-eval` on a GSM8K samples log
(two records per doc, one per filter): every doc held out as an eval item with its match key, the
first filter's scores kept; DuckDB's is the same two inserts from read_json, md5 keys, no scanner.

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

DUCKDB_BATTLES_SQL = """
INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, category, own_model,
                     opponent_model, voted_at, match_key, record_hash, source_file)
SELECT j.battle_id, [{'role': 'user', 'content': j.prompt}], [j.own_answer], [j.opponent_answer], 1, j.vote,
       j.category, j.own_model, j.opponent_model, j.voted_at::TIMESTAMPTZ::TIMESTAMP, md5(lower(j.prompt)),
       md5(concat_ws(chr(31), j.battle_id, j.prompt, j.own_answer, j.opponent_answer, j.vote)),
       'battles.jsonl'
FROM read_json(?, format = 'newline_delimited', columns = {
        battle_id: 'VARCHAR', prompt: 'VARCHAR', own_answer: 'VARCHAR', opponent_answer: 'VARCHAR',
        vote: 'VARCHAR', category: 'VARCHAR', own_model: 'VARCHAR', opponent_model: 'VARCHAR',
        voted_at: 'VARCHAR'}) j
"""

DUCKDB_PAIRS_SQL = """
INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, miner, miner_version, match_key)
SELECT md5(concat_ws(chr(31), j.prompt, j.chosen, j.rejected)), 'dpo',
       [{'role': 'user', 'content': j.prompt}], j.chosen, j.rejected, 'attached', 'ingest-pairs', '1',
       md5(lower(j.prompt))
FROM read_json(?, format = 'newline_delimited', columns = {
        id: 'VARCHAR', prompt: 'VARCHAR', chosen: 'VARCHAR', rejected: 'VARCHAR'}) j
"""

DUCKDB_PROBLEMS_SQL = """
INSERT INTO problems (problem_id, dataset, subject, level, split, question, solution, gold, match_key,
                      source_file)
SELECT 'gsm8k:' || md5(j.question), 'gsm8k', NULL, NULL, 'train', j.question, j.answer,
       replace(trim(string_split(j.answer, '####')[-1]), ',', ''), md5(lower(j.question)), 'problems.jsonl'
FROM read_json(?, format = 'newline_delimited', columns = {question: 'VARCHAR', answer: 'VARCHAR'}) j
"""

DUCKDB_EVALS_SQL = """
INSERT INTO evals (model, suite, item_id, score, correct, extracted_answer, gold, output_len, empty, origin)
SELECT 'sm11a', 'v6', j.item_id, j.score, j.correct, j.extracted_answer, j.gold, length(j.output),
       j.output = '', 'evals.jsonl'
FROM read_json(?, format = 'newline_delimited', columns = {
        item_id: 'VARCHAR', correct: 'BOOLEAN', score: 'DOUBLE', extracted_answer: 'VARCHAR',
        gold: 'VARCHAR', output: 'VARCHAR'}) j
"""

# lm-eval samples: every doc held out as an eval item, the scores of the first filter.
DUCKDB_LM_EVAL_ITEMS_SQL = """
INSERT INTO eval_items (suite, item_id, kind, prompt, gold, match_key)
SELECT 'v6', j.doc_id, 'lm-eval', [{'role': 'user', 'content': j.doc.question}], j.target,
       md5(lower(j.doc.question))
FROM read_json(?, format = 'newline_delimited', columns = {
        doc_id: 'VARCHAR', doc: 'STRUCT(question VARCHAR, answer VARCHAR)', target: 'VARCHAR',
        filter: 'VARCHAR'}) j
WHERE j.filter = 'strict-match'
"""

DUCKDB_LM_EVAL_SQL = """
INSERT INTO evals (model, suite, item_id, score, correct, extracted_answer, gold, output_len, empty,
                   doc_hash, prompt_hash, origin)
SELECT 'sm11a', 'v6', j.doc_id, j.exact_match, j.exact_match >= 0.5, j.filtered_resps[1], j.target,
       length(j.resps[1][1]), j.resps[1][1] = '', j.doc_hash, j.prompt_hash, 'samples.jsonl'
FROM read_json(?, format = 'newline_delimited', columns = {
        doc_id: 'VARCHAR', target: 'VARCHAR', resps: 'VARCHAR[][]', filtered_resps: 'VARCHAR[]',
        filter: 'VARCHAR', doc_hash: 'VARCHAR', prompt_hash: 'VARCHAR', exact_match: 'DOUBLE'}) j
WHERE j.filter = 'strict-match'
"""

FILLER = "Let me think about it step by step and give a careful answer. "


def build_battles(work: Path, n_rows: int) -> tuple[Path, Path]:
    from pairstore.store.store import open_store

    db = work / "battles-base.duckdb"
    with open_store(db):
        pass
    path = work / "battles.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_rows):
            a, b = i % 91, i % 37
            rec = {
                "battle_id": f"b{i:07d}",
                "prompt": f"Question {i}: what is {a} times {b}? Explain briefly.",
                "own_answer": f"{FILLER * 3}Final answer: {a * b}",
                "opponent_answer": f"{FILLER * 2}I think it is {a * b + 1}",
                "vote": ("win", "loss", "tie")[i % 3],
                "category": ("math", "code", "chat")[i % 3],
                "own_model": "brook-s2",
                "opponent_model": "rival-7b",
                "voted_at": f"2026-01-{1 + i % 28:02d}T10:00:00Z",
            }
            f.write(json.dumps(rec) + "\n")
    return db, path


def build_pairs(work: Path, n_rows: int) -> tuple[Path, Path]:
    from pairstore.store.store import open_store

    db = work / "pairs-base.duckdb"
    with open_store(db):
        pass
    path = work / "pairs.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_rows):
            a, b = i % 91, i % 37
            rec = {
                "id": f"p{i:07d}",
                "prompt": f"Question {i}: what is {a} times {b}? Explain briefly.",
                "chosen": f"{FILLER * 3}Final answer: {a * b}",
                "rejected": f"{FILLER * 2}I think it is {a * b + 1}",
            }
            f.write(json.dumps(rec) + "\n")
    return db, path


def _empty_store(work: Path, name: str) -> Path:
    from pairstore.store.store import open_store

    db = work / f"{name}-base.duckdb"
    with open_store(db):
        pass
    return db


def build_problems(work: Path, n_rows: int) -> tuple[Path, Path]:
    """A GSM8K-shaped train file: a question and a worked answer ending in `#### <n>` per record."""
    db = _empty_store(work, "problems")
    path = work / "problems.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_rows):
            a, b = 10 + i % 89, 2 + i % 7
            rec = {
                "question": f"Natalia sold clips to {a} of her friends in month {i}, and then she sold {b} "
                "times as many clips the month after. How many clips did Natalia sell altogether?",
                "answer": f"She sold {a} * {b} = <<{a}*{b}={a * b}>>{a * b} clips the month after.\n"
                f"Altogether she sold {a} + {a * b} = <<{a}+{a * b}={a + a * b}>>{a + a * b} clips.\n"
                f"#### {a + a * b:,}",
            }
            f.write(json.dumps(rec) + "\n")
    return db, path


def build_evals(work: Path, n_rows: int) -> tuple[Path, Path]:
    """Per-item results in the simple JSONL form, each with the model's output."""
    db = _empty_store(work, "evals")
    path = work / "evals.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_rows):
            right = i % 3 != 0
            rec = {
                "item_id": f"q{i:07d}",
                "correct": right,
                "score": 1.0 if right else 0.0,
                "extracted_answer": str(i % 97 if right else i % 89),
                "gold": str(i % 97),
                "output": f"{FILLER * 4}Sample {i}: the total is {i % 97}.\nFinal answer: {i % 97}",
            }
            f.write(json.dumps(rec) + "\n")
    return db, path


def build_lm_eval(work: Path, n_rows: int) -> tuple[Path, Path]:
    """An lm-evaluation-harness samples log of a GSM8K run: two records per doc (the strict-match and
    flexible-extract filters), with the doc, the generation arguments, the response and the metric."""
    db = _empty_store(work, "lm-eval")
    path = work / "samples_gsm8k.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n_rows):
            doc_id, strict = i // 2, i % 2 == 0
            a, b = 10 + doc_id % 89, 2 + doc_id % 7
            question = (
                f"Natalia sold clips to {a} of her friends in month {doc_id}, and then she sold {b} times "
                "as many clips the month after. How many clips did Natalia sell altogether?"
            )
            rec = {
                "doc_id": doc_id,
                "doc": {"question": question, "answer": f"Work.\n#### {a + a * b}"},
                "target": f"Work.\n#### {a + a * b}",
                "arguments": {
                    "gen_args_0": {
                        "arg_0": f"Question: {question}\nAnswer:",
                        "arg_1": {"until": ["Question:", "</s>"], "do_sample": False, "temperature": 0.0},
                    }
                },
                "resps": [[f"{FILLER * 4}The total is {a + a * b}.\n#### {a + a * b}"]],
                "filtered_resps": [str(a + a * b) if strict else f"{a + a * b}"],
                "filter": "strict-match" if strict else "flexible-extract",
                "metrics": ["exact_match"],
                "doc_hash": f"{doc_id:064x}",
                "prompt_hash": f"{doc_id + 1:064x}",
                "target_hash": f"{doc_id + 2:064x}",
                "exact_match": float(doc_id % 3 != 0),
            }
            f.write(json.dumps(rec) + "\n")
    return db, path


def child(table: str, which: str, db: str, path: str) -> None:
    from pairstore.store.store import open_store

    t0 = time.perf_counter()
    with open_store(db) as store:
        if which == "ours":
            if table == "generations":
                from pairstore.ingest.generations import ingest_generations

                added = ingest_generations(store, path, model="so7a").added
            elif table == "battles":
                from pairstore.ingest.battles import ingest_battles

                added = ingest_battles(store, path).added
            elif table == "pairs":
                from pairstore.ingest.pairs import ingest_pairs

                added = ingest_pairs(store, path, source="attached").added
            elif table == "problems":
                from pairstore.ingest.problems import ingest_problems

                added = ingest_problems(store, "gsm8k", path=path).added
            else:
                from audits.loops import scan, scan_many
                from pairstore.ingest.evals import ingest_evals

                fmt = "lm-eval" if table == "lm-eval" else "jsonl"
                added = ingest_evals(
                    store, path, model="sm11a", suite="v6", scan=scan, scan_many=scan_many, fmt=fmt
                ).added
        else:
            sql = {
                "generations": [DUCKDB_SQL],
                "battles": [DUCKDB_BATTLES_SQL],
                "pairs": [DUCKDB_PAIRS_SQL],
                "problems": [DUCKDB_PROBLEMS_SQL],
                "evals": [DUCKDB_EVALS_SQL],
                "lm-eval": [DUCKDB_LM_EVAL_ITEMS_SQL, DUCKDB_LM_EVAL_SQL],  # the scores' count last
            }[table]
            with store.transaction():
                for statement in sql:
                    added = store.con.execute(statement, [path]).fetchall()[0][0]
        rows = store.scalar(f"SELECT count(*) FROM {STORED_IN.get(table, table)}")
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


def run(table: str, which: str, base: Path, work: Path, path: Path) -> dict:
    db = work / f"{table}-{which}.duckdb"
    shutil.copy(base, db)
    t0 = time.perf_counter()
    out = subprocess.run(
        [PY, __file__, "--child", table, which, str(db), str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    wall = time.perf_counter() - t0
    res = json.loads(out.strip().splitlines()[-1])
    res["wall_s"] = wall
    return res


WHAT = {
    "generations": (
        "pairstore ingest generations (checks, content ids, log)",
        "DuckDB read_json + join (no checks, md5 ids)",
    ),
    "battles": (
        "pairstore ingest battles (checks, match keys, record hashes, log)",
        "DuckDB read_json (no checks, md5 keys)",
    ),
    "pairs": (
        "pairstore ingest pairs (checks, match keys, pair ids, origins, log)",
        "DuckDB read_json (no checks, md5 keys, no origins)",
    ),
    "problems": (
        "pairstore ingest problems (checks, gold, content ids, match keys, log)",
        "DuckDB read_json (no checks, md5 keys, gold in SQL)",
    ),
    "evals": (
        "pairstore ingest evals (checks, loop scanner on every output, log)",
        "DuckDB read_json (no checks, no scanner)",
    ),
    "lm-eval": (
        "pairstore ingest evals --format lm-eval (checks, docs held out with match keys, scanner, log)",
        "DuckDB read_json into eval_items and evals (no checks, md5 keys, no scanner)",
    ),
}
# An arm's rows land in the table of its name, but for these.
STORED_IN = {"lm-eval": "evals"}
TABLES = "generations,battles,pairs,problems,evals,lm-eval"
BUILDERS = {
    "generations": build,
    "battles": build_battles,
    "pairs": build_pairs,
    "problems": build_problems,
    "evals": build_evals,
    "lm-eval": build_lm_eval,
}


def median_run(runs: list[dict]) -> dict:
    """The run with the median wall clock (the upper one of an even count), its peak RSS the largest."""
    chosen = dict(sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2])
    chosen["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    chosen["runs"] = len(runs)
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument(
        "--table-rows", type=int, default=200_000, help="battles, pairs, problems and evals at full scale"
    )
    ap.add_argument("--tables", default=TABLES)
    ap.add_argument(
        "--runs", type=int, default=3, help="runs per contender, interleaved; the median wall is reported"
    )
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--child", nargs=4, metavar=("TABLE", "WHICH", "DB", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    tables = [t for t in args.tables.split(",") if t]
    sizes = {"generations": int(FULL_ROWS * args.scale)}
    sizes.update(
        dict.fromkeys(("battles", "pairs", "problems", "evals", "lm-eval"), int(args.table_rows * args.scale))
    )
    work = ROOT / "bench" / "_work" / "ingest"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results, builds, files_mb = {}, {}, {}
    try:
        load_before = os.getloadavg()[0]
        for table in tables:
            t0 = time.perf_counter()
            base, path = BUILDERS[table](work, sizes[table])
            builds[table] = time.perf_counter() - t0
            files_mb[table] = path.stat().st_size / 1e6
            runs: dict[str, list[dict]] = {"duckdb": [], "ours": []}
            for _ in range(max(1, args.runs)):  # interleaved: a burst of load falls on both
                for which in runs:
                    runs[which].append(run(table, which, base, work, path))
            results[table] = {w: median_run(r) for w, r in runs.items()}
        load_after = os.getloadavg()[0]
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    n = sizes["generations"]
    lines = [
        "| table | rows | contender | wall s | rows/s | peak RSS MB | rows added | ours / DuckDB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for table in tables:
        ours, duck = results[table]["ours"], results[table]["duckdb"]
        rows = sizes[table]
        for label, r, ratio in ((WHAT[table][0], ours, f"**{ours['wall_s'] / duck['wall_s']:.2f}x**"),
                                (WHAT[table][1], duck, "")):  # fmt: skip
            lines.append(
                f"| {table} | {rows:,} | {label} | {r['wall_s']:.2f} | {rows / r['wall_s']:,.0f} | "
                f"{r['peak_rss_mb']:,.0f} | {r['added']:,} | {ratio} |"
            )
    table_md = "\n".join(lines)
    shapes = {
        "generations": f"{n:,} generations on {min(N_TASKS, max(100, n // 50)):,} stored loop-fix tasks",
        "battles": "native single-turn battles",
        "pairs": "plain-layout pairs",
        "problems": "a GSM8K-shaped train file",
        "evals": "simple-form eval results with outputs",
        "lm-eval": "an lm-eval GSM8K samples log (two filters per doc: the rows/s count records)",
    }
    what_ran = "Inputs (JSONL files): " + "; ".join(shapes[t] for t in tables)
    built = ", ".join(f"{t} {builds[t]:.1f} s ({files_mb[t]:,.0f} MB)" for t in tables)
    cmd = "".join(
        [
            ".venv/bin/python bench/bench_ingest.py",
            "" if args.scale == 1 else f" --scale {args.scale}",
            "" if args.table_rows == 200_000 else f" --table-rows {args.table_rows}",
            "" if args.tables == TABLES else f" --tables {args.tables}",
            "" if args.runs == 3 else f" --runs {args.runs}",
        ]
    )
    text = (
        textwrap.dedent(f"""\
        ## ingest

        {what_ran}; each contender in its own process on its own copy of the store, {args.runs} runs
        each, the two contenders taking turns; the median wall clock and the largest peak RSS.
        Machine: {cpu_model()}, {os.cpu_count()} CPUs, {ram_text()}, {platform.python_version()};
        load average {load_before:.1f} before, {load_after:.1f} after (the machine is shared: other
        jobs show up in every figure). Building the stores and files: {built}.

        """)
        + table_md
        + textwrap.dedent(f"""

        Goal: ours at most 3x DuckDB's wall clock, peak memory under 1,500 MB (the issue's goal names
        generations, battles and pairs). Battles, pairs and problems key every prompt (question) with
        the holdout's normalization (pairstore.normalize, Python regular expressions, each
        batch's plain ASCII texts normalized together) and hash every row with xxh3 in Python; evals
        run the repetition scanner (audits.loops.scan_many) over every output. No DuckDB function
        computes any of these: that per-row work is most of what is left of each ratio.

        `{cmd}`
        """)
    )
    out = ROOT / "bench" / "results" / "ingest.md"
    atomic_write_text(out, text)
    print(text)


if __name__ == "__main__":
    main()
