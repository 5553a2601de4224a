"""Ingest of generations, battles, pairs, problems and eval results: `pairstore ingest ...` beside a DuckDB
statement that does the same work, interleaved, CPU time beside wall time (bench/contenders.py).

    .venv/bin/python bench/bench_ingest.py                   # 50,000 generations on 1,000 stored tasks (the
                                                             # goal's size), 50,000 battles, pairs, problems,
                                                             # eval results and lm-eval records
    .venv/bin/python bench/bench_ingest.py --scale 20        # 1,000,000 generations, ...
    .venv/bin/python bench/bench_ingest.py --tables generations --rounds 5
    .venv/bin/python bench/bench_ingest.py --scale 0.4 --out bench/results/ingest-20000.md
    .venv/bin/python bench/bench_ingest.py --skip-before      # no runs of the code before (a quick look)

Each contender is a process started from nothing (the interpreter, its imports, opening the store, the
work, the commit), on its own copy of one store (DuckDB's side imports duckdb alone: the floor), and they
take turns (A B, B A, ...): the load of a
shared machine falls on both. Per contender: the median wall and CPU seconds (user + system of the
process, os.wait4) with their range, and the highest peak RSS; the ratio is per round, ours over the
baseline's, median [range].

The baseline does the same work in one DuckDB statement per table, in a transaction, on the same store:
it reads the same JSONL file (read_json), writes the same rows (the same columns and nesting: a prompt
as a message list, lists of answers, a timestamp), skips ids already stored (an anti join), joins the
items (generations on tasks: the goal's "read_json joined to tasks") and logs the file with its SHA-256
in `ingests`. What no DuckDB function computes is the rest of ours: xxh3-128 content ids (md5 there),
the match keys' Unicode normalization of every prompt (md5 of the lowercased text there), the record
checks, the repetition scanner over eval outputs.

Before and after: the same ingest run by the code of --before (default BEFORE_REF, commit bf1d49a: the
last commit before the input formats became one declaration each under pairstore/ingest/formats/,
665bf1c), checked out in a temporary git worktree beside the work folder, as bench/bench_gate.py does.
Its store is built by that code (the same data at its schema version) and its input file by the same
builder; its contender imports that worktree's pairstore first and calls the same public functions
(`ingest_generations(store, path, model=...)`, ...). It takes its turn with the other two, and the table
shows it beside this checkout's row (CPU, wall, peak RSS) with the ratio after / before per round.

Writes bench/results/ingest.md (or --out) and deletes its work folder and the worktree unless --keep.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from contenders import (  # noqa: E402
    Contender,
    before_worktree,
    ratio_text,
    ratios,
    remove_worktree,
    run_interleaved,
    summarize,
)
from machine import cpu_model, ram_text  # noqa: E402

if TYPE_CHECKING:
    from pairstore.store.store import Store

PY = sys.executable
N_TASKS = 1_000
ROWS = 50_000
# The last commit before the input formats became one declaration each (pairstore/ingest/formats/, 665bf1c).
BEFORE_REF = "bf1d49a"
# --duckdb-memory-limit: DuckDB's memory limit in our contenders' processes (0: the ingest's own)
LIMIT_MB = int(os.environ.get("BENCH_INGEST_DUCKDB_MB", "0"))


def use_code(code: str | None) -> None:
    """Import pairstore (and generators, audits) from the worktree `code` instead of this checkout: put
    first on the path before anything imports them (a child of the "before" contender)."""
    if code:
        sys.path.insert(0, code)


def build(work: Path, n_rows: int) -> tuple[Path, Path]:
    from generators.tasks import generate_loopfix
    from pairstore.store.store import open_store

    db = work / "base.duckdb"
    with open_store(db) as store:
        generate_loopfix(store, N_TASKS, seed=5)
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


# The same work as ours, one statement each (a transaction around them; `?` is the file): the same rows
# and columns, ids already stored skipped, the file logged in `ingests` with its SHA-256 (second `?`).
LOG_SQL = "INSERT INTO ingests (file_sha256, kind, path, rows_read, rows_added) VALUES (?, ?, ?, ?, ?)"


def pairs_file_in(miner: str) -> list[str]:
    """The pairs file read into `_in` (an md5 for the pair id, the line), its new pairs into `pairs`."""
    return [
        """
CREATE TEMP TABLE _in AS
SELECT md5(to_json(['user:' || j.prompt, j.chosen, j.rejected])) AS pair_id, j.id, j.prompt, j.chosen,
       j.rejected, row_number() OVER () AS line
FROM read_json(?, format = 'newline_delimited', columns = {
        id: 'VARCHAR', prompt: 'VARCHAR', chosen: 'VARCHAR', rejected: 'VARCHAR'}) j
""",
        f"""
INSERT INTO pairs (pair_id, kind, prompt, chosen, rejected, source, miner, miner_version, match_key)
SELECT i.pair_id, 'dpo', [{{'role': 'user', 'content': i.prompt}}], i.chosen, i.rejected, 'attached',
       '{miner}', '1', md5(lower(i.prompt))
FROM _in i ANTI JOIN pairs p USING (pair_id)
""",
    ]


DUCKDB_SQL = {
    "generations": [
        """
INSERT INTO generations (gen_id, model, item_kind, item_id, suite, prompt, output, sample_index,
                         temperature, top_p, max_new_tokens, seed, decoding, source_file)
SELECT n.* FROM (
    SELECT md5(to_json(['so7a', j.item_kind, j.item_id, coalesce(j.sample_index, 0)::VARCHAR,
                        j.temperature::VARCHAR, j.output])) AS gen_id,
           'so7a', j.item_kind, j.item_id, NULL, [{'role': 'user', 'content': t.prompt}], j.output,
           coalesce(j.sample_index, 0), j.temperature, j.top_p, j.max_new_tokens, j.seed, NULL, 'outs.jsonl'
    FROM read_json(?, format = 'newline_delimited', columns = {
            item_kind: 'VARCHAR', item_id: 'VARCHAR', output: 'VARCHAR', sample_index: 'INTEGER',
            temperature: 'DOUBLE', top_p: 'DOUBLE', max_new_tokens: 'INTEGER', seed: 'BIGINT'}) j
    JOIN tasks t ON t.task_id = j.item_id) n
ANTI JOIN generations g USING (gen_id)
"""
    ],
    "battles": [
        """
INSERT INTO battles (battle_id, prompt, own_answers, opponent_answers, n_turns, vote, category, own_model,
                     opponent_model, voted_at, match_key, record_hash, source_file)
SELECT n.* FROM (
    SELECT j.battle_id, [{'role': 'user', 'content': j.prompt}], [j.own_answer], [j.opponent_answer], 1,
           j.vote, j.category, j.own_model, j.opponent_model, j.voted_at::TIMESTAMPTZ::TIMESTAMP,
           md5(lower(j.prompt)),
           md5(to_json({battle_id: j.battle_id, prompt: j.prompt, own: j.own_answer, opp: j.opponent_answer,
                        vote: j.vote, category: j.category, own_model: j.own_model,
                        opponent_model: j.opponent_model, voted_at: j.voted_at})),
           'battles.jsonl'
    FROM read_json(?, format = 'newline_delimited', columns = {
            battle_id: 'VARCHAR', prompt: 'VARCHAR', own_answer: 'VARCHAR', opponent_answer: 'VARCHAR',
            vote: 'VARCHAR', category: 'VARCHAR', own_model: 'VARCHAR', opponent_model: 'VARCHAR',
            voted_at: 'VARCHAR'}) j) n
ANTI JOIN battles b USING (battle_id)
"""
    ],
    "pairs": [
        *pairs_file_in("ingest-pairs"),
        """
INSERT INTO pair_origins (pair_id, origin_kind, origin_id, rule, miner)
SELECT pair_id, 'import', 'f:' || line, 'ingest pairs --source attached', 'ingest-pairs' FROM _in
UNION ALL
SELECT pair_id, 'file_id', id, 'ingest pairs --source attached', 'ingest-pairs' FROM _in WHERE id IS NOT NULL
""",
    ],
    # round attach: the rows as new pairs with an `attached` origin (file and line), each row's pair in
    # export_rows, the file registered (ours writes `exports` and `actions`; here the `ingests` row)
    "attach": [
        *pairs_file_in("round-attach"),
        """
INSERT INTO pair_origins (pair_id, origin_kind, origin_id, rule, miner)
SELECT pair_id, 'attached', 'f:' || line, 'round attach base', 'round-attach' FROM _in
""",
        """
INSERT INTO export_rows SELECT 'attached:base:f', line - 1, pair_id FROM _in
""",
    ],
    "problems": [
        """
INSERT INTO problems (problem_id, dataset, subject, level, split, question, solution, gold, match_key,
                      source_file)
SELECT n.* FROM (
    SELECT 'gsm8k:' || md5(j.question) AS problem_id, 'gsm8k', NULL, NULL, 'train', j.question, j.answer,
           replace(trim(string_split(j.answer, '####')[-1]), ',', ''), md5(lower(j.question)),
           'problems.jsonl'
    FROM read_json(?, format = 'newline_delimited', columns = {question: 'VARCHAR', answer: 'VARCHAR'}) j) n
ANTI JOIN problems p USING (problem_id)
"""
    ],
    "evals": [
        """
INSERT INTO evals (model, suite, item_id, score, correct, extracted_answer, gold, output_len, empty, origin)
SELECT n.* FROM (
    SELECT 'sm11a', 'v6', j.item_id, j.score, j.correct, j.extracted_answer, j.gold, length(j.output),
           j.output = '', 'evals.jsonl'
    FROM read_json(?, format = 'newline_delimited', columns = {
            item_id: 'VARCHAR', correct: 'BOOLEAN', score: 'DOUBLE', extracted_answer: 'VARCHAR',
            gold: 'VARCHAR', output: 'VARCHAR'}) j) n
ANTI JOIN evals e ON e.model = 'sm11a' AND e.suite = 'v6' AND e.item_id = n.item_id
"""
    ],
    "lm-eval": [
        """
INSERT INTO eval_items (suite, item_id, kind, prompt, gold, match_key)
SELECT DISTINCT ON (j.doc_id) 'v6', j.doc_id, 'lm-eval', [{'role': 'user', 'content': j.doc.question}],
       j.target, md5(lower(j.doc.question))
FROM read_json(?, format = 'newline_delimited', columns = {
        doc_id: 'VARCHAR', doc: 'STRUCT(question VARCHAR, answer VARCHAR)', target: 'VARCHAR'}) j
""",
        """
INSERT INTO evals (model, suite, item_id, score, correct, extracted_answer, gold, output_len, empty,
                   doc_hash, prompt_hash, origin)
SELECT 'sm11a', 'v6', j.doc_id, j.exact_match, j.exact_match >= 0.5, j.filtered_resps[1], j.target,
       length(j.resps[1][1]), j.resps[1][1] = '', j.doc_hash, j.prompt_hash, 'samples.jsonl'
FROM read_json(?, format = 'newline_delimited', columns = {
        doc_id: 'VARCHAR', target: 'VARCHAR', resps: 'VARCHAR[][]', filtered_resps: 'VARCHAR[]',
        filter: 'VARCHAR', doc_hash: 'VARCHAR', prompt_hash: 'VARCHAR', exact_match: 'DOUBLE'}) j
WHERE j.filter = 'strict-match'
""",
    ],
}


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
    return _empty_store(work, "pairs"), write_pairs_file(work / "pairs.jsonl", n_rows)


def build_attach(work: Path, n_rows: int) -> tuple[Path, Path]:
    """The pairs file of build_pairs, attached to the round `base` of a store that has it."""
    from pairstore.rounds.recipes import add_round
    from pairstore.store.store import open_store

    db = work / "attach-base.duckdb"
    recipe = work / "base.toml"
    recipe.write_text('name = "base"\nkind = "base"\n')
    with open_store(db) as store:
        add_round(store, recipe)
    return db, write_pairs_file(work / "attach.jsonl", n_rows)


def write_pairs_file(path: Path, n_rows: int) -> Path:
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
    return path


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


def child(table: str, which: str, base: str, path: str) -> None:
    """One contender's run: a copy of the base store, the work, the commit; prints what it added. DuckDB's
    side imports nothing of the project: duckdb alone, the floor."""
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-", dir=Path(base).parent))
    db = work / "store.duckdb"
    shutil.copyfile(base, db)
    try:
        if which == "cli":  # what a user runs: the console command, its imports and all
            from pairstore.cli import cli

            args = ["--db", str(db), "-q", *CLI_ARGS[table], path]
            cli.main(args=args, prog_name="pairstore", standalone_mode=False)
            print(json.dumps({"added": None}))
            return
        if which == "ours":
            from pairstore.store.store import open_store

            with open_store(db) as store:
                if LIMIT_MB:  # a lower limit than bounded_memory's, which keeps it: what cannot spill
                    store.con.execute(f"SET memory_limit = '{LIMIT_MB}MB'")
                try:
                    added = ours(store, table, path)
                except Exception as e:  # under a low limit: the finding is that it ran out (the table says)
                    if not LIMIT_MB or "Out of Memory" not in str(e):
                        raise
                    print(json.dumps({"added": None, "failed": str(e).splitlines()[0]}))
                    return
        else:
            import duckdb

            con = duckdb.connect(str(db))
            con.execute("BEGIN")
            for statement in DUCKDB_SQL[table]:
                got = con.execute(statement, [path] if "?" in statement else []).fetchall()
                added = got[0][0] if got else 0
            sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            con.execute(LOG_SQL, [sha, table, path, added, added])
            con.execute("COMMIT")
            con.close()
        print(json.dumps({"added": added}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ours(store: Store, table: str, path: str) -> int:
    """Our ingest of `table` from `path` into `store`: the rows added."""
    if table == "generations":
        from pairstore.ingest.generations import ingest_generations

        return ingest_generations(store, path, model="so7a").added
    if table == "battles":
        from pairstore.ingest.battles import ingest_battles

        return ingest_battles(store, path).added
    if table == "pairs":
        from pairstore.ingest.pairs import ingest_pairs

        return ingest_pairs(store, path, source="attached").added
    if table == "attach":
        from pairstore.export.attach import attach_round

        return attach_round(store, "base", path).added
    if table == "problems":
        from pairstore.ingest.problems import ingest_problems

        return ingest_problems(store, "gsm8k", path=path).added
    from audits.loops import scan, scan_many
    from pairstore.ingest.evals import ingest_evals

    fmt = "lm-eval" if table == "lm-eval" else "jsonl"
    return ingest_evals(store, path, model="sm11a", suite="v6", scan=scan, scan_many=scan_many, fmt=fmt).added


CLI_ARGS = {  # the console command after `pairstore --db DB -q`, the file last
    "generations": ["ingest", "generations", "--model", "so7a"],
    "battles": ["ingest", "battles"],
    "pairs": ["ingest", "pairs", "--source", "attached"],
    "attach": ["round", "attach", "base"],
    "problems": ["ingest", "problems", "--dataset", "gsm8k", "--path"],
    "evals": ["ingest", "evals", "--model", "sm11a", "--suite", "v6"],
    "lm-eval": ["ingest", "evals", "--model", "sm11a", "--suite", "v6", "--format", "lm-eval"],
}
WHAT = {
    "generations": "generations on stored loop-fix tasks (the item joined: read_json joined to tasks)",
    "battles": "native single-turn battles",
    "pairs": "plain-layout pairs with an id (origins: the line and the id)",
    "attach": "the pairs file above attached to a round (`round attach`: new pairs, each row's pair linked)",
    "problems": "a GSM8K-shaped train file",
    "evals": "simple-form eval results with outputs (ours: the repetition scanner over each)",
    "lm-eval": "an lm-eval GSM8K samples log, two filters per doc (docs held out as eval items)",
}
TABLES = "generations,battles,pairs,attach,problems,evals,lm-eval"
BUILDERS = {
    "generations": build,
    "battles": build_battles,
    "pairs": build_pairs,
    "attach": build_attach,
    "problems": build_problems,
    "evals": build_evals,
    "lm-eval": build_lm_eval,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="rows = 50,000 x scale for every table")
    ap.add_argument("--tables", default=TABLES)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the contenders, interleaved")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--cli", action="store_true", help="also the console command (its imports and all)")
    ap.add_argument("--before", default=BEFORE_REF, help=f"the commit to compare with (default {BEFORE_REF})")
    ap.add_argument("--skip-before", action="store_true", help="no runs of the code before (a quick look)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ingest.md"), help="the results file")
    ap.add_argument(
        "--duckdb-memory-limit",
        type=int,
        default=0,
        help="DuckDB's memory limit (MB) in our contenders, before and after (shows what cannot spill)",
    )
    ap.add_argument("--child", nargs=4, metavar=("TABLE", "WHICH", "BASE", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--build", nargs=3, metavar=("TABLE", "WORK", "ROWS"), help=argparse.SUPPRESS)
    ap.add_argument("--code", help=argparse.SUPPRESS)  # a child's pairstore: this worktree's, not ROOT's
    args = ap.parse_args()
    if args.duckdb_memory_limit:  # read by every child (LIMIT_MB)
        os.environ["BENCH_INGEST_DUCKDB_MB"] = str(args.duckdb_memory_limit)
    if args.child:
        use_code(args.code)
        child(*args.child)
        return
    if args.build:
        use_code(args.code)
        table, folder, n = args.build
        print(json.dumps([str(p) for p in BUILDERS[table](Path(folder), int(n))]))
        return
    tables = [t for t in args.tables.split(",") if t]
    rows = int(ROWS * args.scale)
    work = ROOT / "bench" / "_work" / "ingest"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sections, built = [], []
    load_before = os.getloadavg()[0]
    old = None if args.skip_before else before_worktree(work / "before-code", args.before)
    try:
        for table in tables:
            t0 = time.perf_counter()
            base, path = BUILDERS[table](work, rows)
            built.append(f"{table} {time.perf_counter() - t0:.1f} s ({path.stat().st_size / 1e6:,.0f} MB)")
            files = [str(base), str(path)]
            ours_name = "attach_round()" if table == "attach" else f"ingest_{table.replace('-', '_')}()"
            contenders = [
                Contender(ours_name, [PY, __file__, "--child", table, "ours", *files]),
                Contender("DuckDB, the same work", [PY, __file__, "--child", table, "duckdb", *files]),
            ]
            if old is not None:
                # the store and the file made by the code before: the same data at its schema version
                folder = work / "before" / table
                folder.mkdir(parents=True)
                made = subprocess.run(
                    [PY, __file__, "--build", table, str(folder), str(rows), "--code", str(old)],
                    check=True, capture_output=True, text=True,
                )  # fmt: skip
                old_files = json.loads(made.stdout.strip().splitlines()[-1])
                contenders.insert(
                    1,
                    Contender(
                        f"{ours_name} before ({args.before})",
                        [PY, __file__, "--child", table, "ours", *old_files, "--code", str(old)],
                    ),
                )
            if args.cli:
                name = f"pairstore {' '.join(CLI_ARGS[table][:2])}"
                contenders.append(Contender(name, [PY, __file__, "--child", table, "cli", *files]))
            runs = run_interleaved(contenders, rounds=args.rounds)
            stats = summarize(runs)
            base_name = "DuckDB, the same work"
            against = {name: (ratio_text(ratios(runs, name, base_name, "cpu_s")),
                              ratio_text(ratios(runs, name, base_name, "wall_s")))
                       for name in stats if name != base_name}  # fmt: skip
            before_name = contenders[1].name if old is not None else None
            versus = (
                {ours_name: (ratio_text(ratios(runs, ours_name, before_name, "cpu_s")),
                             ratio_text(ratios(runs, ours_name, before_name, "wall_s")))}
                if before_name else {}
            )  # fmt: skip
            sections.append((table, rows, stats, against, versus))
    finally:
        if old is not None and not args.keep:
            remove_worktree(old)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()[0]
    lines = [
        "| table | rows | contender | wall s, median [range] | CPU s, median [range] | peak RSS MB | "
        "ours / DuckDB: CPU | wall | after / before: CPU | wall |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for table, n, stats, against, versus in sections:
        failed = {s.name for s in stats.values() if any('"failed"' in r.stdout for r in s.runs)}
        for s in stats.values():
            (w0, w1), (c0, c1) = s.wall_range, s.cpu_range
            ratio = (f"**{against[s.name][0]}**", against[s.name][1]) if s.name in against else ("", "")
            change = (f"**{versus[s.name][0]}**", versus[s.name][1]) if s.name in versus else ("", "")
            if failed:  # a run that did not finish did less work: no ratio with it
                ratio = ("", "") if s.name in failed else ratio
                change = ("", "")
            rss = f"{s.max_rss_mb:,.0f}" + (" (ran out of DuckDB's memory)" if s.name in failed else "")
            lines.append(
                f"| {table} | {n:,} | {s.name} | {s.median_wall:.2f} [{w0:.2f}-{w1:.2f}] | "
                f"{s.median_cpu:.2f} [{c0:.2f}-{c1:.2f}] | {rss} | {ratio[0]} | {ratio[1]} | "
                f"{change[0]} | {change[1]} |"
            )
    default_out = ROOT / "bench" / "results" / "ingest.md"
    cmd = "".join(
        [
            ".venv/bin/python bench/bench_ingest.py",
            "" if args.scale == 1 else f" --scale {args.scale:g}",
            "" if args.tables == TABLES else f" --tables {args.tables}",
            "" if args.rounds == 3 else f" --rounds {args.rounds}",
            " --cli" if args.cli else "",
            f" --duckdb-memory-limit {args.duckdb_memory_limit}" if args.duckdb_memory_limit else "",
            " --skip-before" if args.skip_before else "",
            "" if args.skip_before or args.before == BEFORE_REF else f" --before {args.before}",
            "" if Path(args.out).resolve() == default_out else f" --out {os.path.relpath(args.out, ROOT)}",
        ]
    )
    inputs = "; ".join(f"{t}: {WHAT[t]}" for t in tables)
    limit_text = (
        " Our contenders (this code's and the code before's) run with DuckDB's memory limit at "
        f"{args.duckdb_memory_limit} MB, so their peak RSS counts only what DuckDB cannot spill."
        if args.duckdb_memory_limit
        else ""
    )
    before_text = (
        "No runs of the code before (--skip-before)."
        if args.skip_before
        else f"Before: the same public ingest function run by commit `{args.before}` (a git worktree; its "
        "own store and input file, the same data at its schema version), in the same rounds; after / "
        "before is per round."
    )
    text = (
        textwrap.dedent(f"""\
        ## ingest

        Command: `{cmd}`
        Machine: {cpu_model()}, {os.cpu_count()} CPUs, {ram_text()}, Python {platform.python_version()};
        load average {load_before:.1f} before, {load_after:.1f} after (a shared machine: CPU seconds are the
        steadier figure). Inputs (JSONL files, {rows:,} records each): {inputs}. Built: {", ".join(built)}.

        Each contender is a process started from nothing (interpreter, imports, opening the store, the work,
        the commit) on its own copy of the store, the contenders taking turns ({args.rounds} rounds, A B C
        then C B A); the ratio is per round, ours over DuckDB's, median [range]. DuckDB's side does the
        same work in one statement per table (bench/bench_ingest.py's docstring says what it skips: what
        no DuckDB function computes). {before_text}{limit_text}

        """)
        + "\n".join(lines)
        + textwrap.dedent("""

        Goal: generations at most 3x DuckDB's read_json joined to tasks. The fixed part of ours (importing
        pyarrow's JSON reader and the project, about a second of wall time on a loaded machine) weighs
        most at this size; per row, ours adds the xxh3-128 content id of every output, and for battles,
        pairs and problems the Unicode normalization of every prompt behind its match key.
        """)
    )
    from pairstore.files import atomic_write_text

    atomic_write_text(Path(args.out), text)
    print(text)


if __name__ == "__main__":
    main()
