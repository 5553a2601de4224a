"""Ordered, append-only schema migrations.

Each migration is a function that runs inside one transaction and is recorded
in `schema_version`. Never edit one that has shipped: append a new one.
Table and column names are public interface, documented in docs/schema.md
(tests/store/test_schema_docs.py fails when a column is undocumented).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import duckdb

from pairstore.keys import TURN_SEP, key_of_text, match_text
from pairstore.normalize import word_text
from pairstore.store.rekey import rekey_benchmarks, rekey_stored_rows

MSG = "STRUCT(role VARCHAR, content VARCHAR)[]"


def m001_core(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"""
    CREATE TABLE battles (
        battle_id        VARCHAR PRIMARY KEY,
        prompt           {MSG} NOT NULL,
        own_answers      VARCHAR[] NOT NULL,
        opponent_answers VARCHAR[] NOT NULL,
        n_turns          INTEGER NOT NULL,
        vote             VARCHAR NOT NULL CHECK (vote IN ('win', 'loss', 'tie', 'both_bad')),
        category         VARCHAR,
        own_model        VARCHAR,
        opponent_model   VARCHAR,
        voted_at         TIMESTAMP,
        match_key        VARCHAR NOT NULL,
        record_hash      VARCHAR NOT NULL,
        source_file      VARCHAR,
        ingested_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE holdout_sets (
        set_name    VARCHAR PRIMARY KEY,
        description VARCHAR,
        method      VARCHAR,
        seed        BIGINT,
        created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE holdout (
        set_name       VARCHAR NOT NULL,
        item_id        VARCHAR NOT NULL,
        item_kind      VARCHAR NOT NULL CHECK (item_kind IN ('battle', 'task', 'eval_item', \
'problem', 'prompt')),
        match_key      VARCHAR NOT NULL,
        task_key       VARCHAR,
        match_text     VARCHAR NOT NULL,
        added_at       TIMESTAMP NOT NULL DEFAULT current_timestamp,
        removed_at     TIMESTAMP,
        removed_reason VARCHAR,
        PRIMARY KEY (set_name, item_id)
    );
    CREATE TABLE holdout_exemptions (
        set_name   VARCHAR NOT NULL,
        item_id    VARCHAR NOT NULL,
        pair_id    VARCHAR NOT NULL,
        reason     VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        PRIMARY KEY (set_name, item_id, pair_id)
    );
    CREATE TABLE problems (
        problem_id  VARCHAR PRIMARY KEY,
        dataset     VARCHAR NOT NULL CHECK (dataset IN ('gsm8k', 'math')),
        subject     VARCHAR,
        level       VARCHAR,
        split       VARCHAR NOT NULL,
        question    VARCHAR NOT NULL,
        solution    VARCHAR NOT NULL,
        gold        VARCHAR NOT NULL,
        match_key   VARCHAR NOT NULL,
        source_file VARCHAR,
        ingested_at TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE tasks (
        task_id    VARCHAR PRIMARY KEY,
        family     VARCHAR NOT NULL,
        task_key   VARCHAR NOT NULL,
        prompt     VARCHAR NOT NULL,
        gold       VARCHAR NOT NULL,
        chosen     VARCHAR NOT NULL,
        params     JSON NOT NULL,
        phrasing   INTEGER NOT NULL,
        seed       BIGINT NOT NULL,
        suite      VARCHAR,
        match_key  VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE eval_items (
        suite      VARCHAR NOT NULL,
        item_id    VARCHAR NOT NULL,
        kind       VARCHAR NOT NULL,
        prompt     {MSG} NOT NULL,
        gold       VARCHAR,
        task_key   VARCHAR,
        match_key  VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        PRIMARY KEY (suite, item_id)
    );
    CREATE TABLE generations (
        gen_id            VARCHAR PRIMARY KEY,
        model             VARCHAR NOT NULL,
        item_kind         VARCHAR NOT NULL CHECK (item_kind IN ('problem', 'task', 'eval_item', 'prompt')),
        item_id           VARCHAR,
        suite             VARCHAR,
        prompt            {MSG} NOT NULL,
        output            VARCHAR NOT NULL,
        sample_index      INTEGER NOT NULL DEFAULT 0,
        temperature       DOUBLE,
        top_p             DOUBLE,
        max_new_tokens    INTEGER,
        seed              BIGINT,
        decoding          JSON,
        extracted_answer  VARCHAR,
        verdict           VARCHAR CHECK (verdict IN ('correct', 'wrong', 'unscored')),
        loop_flagged      BOOLEAN,
        loop_catastrophic BOOLEAN,
        loop_tail         BOOLEAN,
        max_repeat        INTEGER,
        n_tokens          INTEGER,
        source_file       VARCHAR,
        created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE pairs (
        pair_id       VARCHAR PRIMARY KEY,
        kind          VARCHAR NOT NULL CHECK (kind IN ('dpo', 'sft')),
        prompt        {MSG} NOT NULL,
        chosen        VARCHAR NOT NULL,
        rejected      VARCHAR,
        source        VARCHAR NOT NULL,
        family        VARCHAR,
        miner         VARCHAR NOT NULL,
        miner_version VARCHAR NOT NULL,
        match_key     VARCHAR NOT NULL,
        task_key      VARCHAR,
        created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
        CHECK ((kind = 'sft') = (rejected IS NULL))
    );
    CREATE TABLE pair_origins (
        pair_id     VARCHAR NOT NULL,
        origin_kind VARCHAR NOT NULL,
        origin_id   VARCHAR NOT NULL,
        rule        VARCHAR NOT NULL,
        miner       VARCHAR NOT NULL,
        created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
        PRIMARY KEY (pair_id, origin_kind, origin_id)
    );
    CREATE TABLE rounds (
        name          VARCHAR PRIMARY KEY,
        kind          VARCHAR NOT NULL CHECK (kind IN ('dpo', 'soup', 'base')),
        parents       VARCHAR[] NOT NULL,
        alpha         DOUBLE,
        job_id        VARCHAR,
        recipe        JSON NOT NULL,
        recipe_toml   VARCHAR NOT NULL,
        recipe_sha256 VARCHAR NOT NULL,
        added_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE exports (
        export_id    VARCHAR PRIMARY KEY,
        round        VARCHAR NOT NULL,
        kind         VARCHAR NOT NULL CHECK (kind IN ('export', 'attached')),
        path         VARCHAR NOT NULL,
        sha256       VARCHAR NOT NULL,
        rows         BIGINT NOT NULL,
        content_hash VARCHAR NOT NULL,
        evidence     JSON,
        created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE export_rows (
        export_id VARCHAR NOT NULL,
        row_index BIGINT NOT NULL,
        pair_id   VARCHAR NOT NULL,
        PRIMARY KEY (export_id, row_index)
    );
    CREATE TABLE checkpoints (
        name       VARCHAR PRIMARY KEY,
        kind       VARCHAR NOT NULL CHECK (kind IN ('base', 'adapter', 'merge', 'soup')),
        parents    VARCHAR[] NOT NULL,
        alpha      DOUBLE,
        round      VARCHAR,
        path       VARCHAR,
        evidence   JSON,
        created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE evals (
        model             VARCHAR NOT NULL,
        suite             VARCHAR NOT NULL,
        item_id           VARCHAR NOT NULL,
        score             DOUBLE,
        correct           BOOLEAN,
        extracted_answer  VARCHAR,
        gold              VARCHAR,
        output_len        INTEGER,
        empty             BOOLEAN,
        loop_flagged      BOOLEAN,
        loop_catastrophic BOOLEAN,
        gen_id            VARCHAR,
        doc_hash          VARCHAR,
        prompt_hash       VARCHAR,
        origin            VARCHAR NOT NULL,
        created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp,
        PRIMARY KEY (model, suite, item_id)
    );
    CREATE TABLE judgments (
        judgment_id   VARCHAR PRIMARY KEY,
        battle_id     VARCHAR NOT NULL,
        model_a       VARCHAR NOT NULL,
        model_b       VARCHAR NOT NULL,
        winner        VARCHAR NOT NULL CHECK (winner IN ('a', 'b', 'tie')),
        heavy_flaw_a  BOOLEAN NOT NULL DEFAULT false,
        heavy_flaw_b  BOOLEAN NOT NULL DEFAULT false,
        judge         VARCHAR,
        notes         VARCHAR,
        source_file   VARCHAR,
        created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE TABLE benchmark_refs (
        benchmark     VARCHAR NOT NULL,
        item_id       VARCHAR NOT NULL,
        text          VARCHAR NOT NULL,
        match_key     VARCHAR NOT NULL,
        n             INTEGER NOT NULL,
        registered_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        PRIMARY KEY (benchmark, item_id)
    );
    CREATE TABLE benchmark_ngrams (
        benchmark VARCHAR NOT NULL,
        item_id   VARCHAR NOT NULL,
        ngram     UBIGINT NOT NULL
    );
    CREATE TABLE ingests (
        file_sha256 VARCHAR NOT NULL,
        kind        VARCHAR NOT NULL,
        path        VARCHAR NOT NULL,
        rows_read   BIGINT NOT NULL,
        rows_added  BIGINT NOT NULL,
        ingested_at TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    CREATE SEQUENCE audit_log_seq START 1;
    CREATE TABLE audit_log (
        seq     BIGINT PRIMARY KEY DEFAULT nextval('audit_log_seq'),
        logged_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
        action  VARCHAR NOT NULL,
        subject VARCHAR NOT NULL,
        detail  JSON
    );
    """)


def m002_views(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
    CREATE VIEW pairs_by_source AS
        SELECT source, family, kind, count(*) AS pairs
        FROM pairs GROUP BY ALL ORDER BY source, family, kind;
    CREATE VIEW holdout_status AS
        SELECT h.set_name, h.item_id, h.item_kind, h.match_key,
               CASE WHEN h.removed_at IS NULL THEN 'active' ELSE 'removed' END AS status,
               h.added_at, h.removed_at, h.removed_reason,
               (SELECT count(*) FROM holdout_exemptions e
                 WHERE e.set_name = h.set_name AND e.item_id = h.item_id) AS exemptions
        FROM holdout h ORDER BY h.set_name, h.item_id;
    CREATE VIEW battle_votes_by_category AS
        SELECT coalesce(category, '(none)') AS category, count(*) AS battles,
               count(*) FILTER (vote = 'win') AS wins,
               count(*) FILTER (vote = 'loss') AS losses,
               count(*) FILTER (vote = 'tie') AS ties,
               count(*) FILTER (vote = 'both_bad') AS both_bad,
               round(count(*) FILTER (vote = 'win') / nullif(count(*) FILTER (vote IN ('win', 'loss')), 0), 3)
                   AS win_rate
        FROM battles GROUP BY ALL ORDER BY battles DESC, category;
    """)


def _evidence_sha(evidence: Any) -> str | None:
    """SHA-256 of the evidence file an export wrote, rebuilt from the JSON the registry stored with it."""
    if evidence is None:
        return None
    text = json.dumps(json.loads(evidence), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def m003_disguise_proof_keys_and_evidence(con: duckdb.DuckDBPyConnection) -> None:
    """Match keys that survive disguise (pairstore.normalize), recomputed for every stored row; the
    registry keeps the SHA-256 of each export's evidence file and marks superseded registrations."""
    rekey_stored_rows(con)
    # Holdout members: from the battle or task itself where there is one, else from the stored match text
    # (normalized the old way, which the new normalization folds further).
    rows = con.execute("""
        SELECT h.set_name, h.item_id, h.match_text, b.prompt, t.prompt FROM holdout h
        LEFT JOIN battles b ON h.item_kind = 'battle' AND b.battle_id = h.item_id
        LEFT JOIN tasks t ON h.item_kind = 'task' AND t.task_id = h.item_id""").fetchall()
    for set_name, item_id, old_text, battle_prompt, task_prompt in rows:
        if battle_prompt is not None:
            text = match_text([dict(m) for m in battle_prompt])
        elif task_prompt is not None:
            text = match_text(task_prompt)
        else:
            text = TURN_SEP.join(word_text(t) for t in old_text.split(TURN_SEP))
        con.execute(
            "UPDATE holdout SET match_text = ?, match_key = ? WHERE set_name = ? AND item_id = ?",
            [text, key_of_text(text), set_name, item_id],
        )
    # Benchmark references: keys and n-grams read through the same normalization.
    rekey_benchmarks(con)
    con.execute("""
        ALTER TABLE exports ADD COLUMN evidence_path VARCHAR;
        ALTER TABLE exports ADD COLUMN evidence_sha256 VARCHAR;
        ALTER TABLE exports ADD COLUMN superseded_at TIMESTAMP;
        ALTER TABLE exports ADD COLUMN superseded_by VARCHAR;
    """)
    for export_id, path, round_name, evidence in con.execute(
        "SELECT export_id, path, round, evidence FROM exports WHERE kind = 'export'"
    ).fetchall():
        folder = path.rsplit("/", 1)[0] if "/" in path else "."
        con.execute(
            "UPDATE exports SET evidence_path = ?, evidence_sha256 = ? WHERE export_id = ?",
            [f"{folder}/{round_name}.training_evidence.json", _evidence_sha(evidence), export_id],
        )


def m004_public_sources(con: duckdb.DuckDBPyConnection) -> None:
    """What the public sources carry besides the core fields: Arena battles' language, moderation flag and
    anonymity; a MATH-500-shaped problem's own id."""
    con.execute("""
    ALTER TABLE battles ADD COLUMN language VARCHAR;
    ALTER TABLE battles ADD COLUMN flagged BOOLEAN;
    ALTER TABLE battles ADD COLUMN anonymous BOOLEAN;
    ALTER TABLE problems ADD COLUMN unique_id VARCHAR;
    """)


def m005_scratch_schema_for_sql_write(con: duckdb.DuckDBPyConnection) -> None:
    """The schema `pairstore sql --write` keeps the user's own tables and views in (pairstore.store.sql):
    everything else in the file is pairstore's."""
    con.execute("CREATE SCHEMA IF NOT EXISTS scratch")


def m006_three_verdicts(con: duckdb.DuckDBPyConnection) -> None:
    """`generations.verdict` takes a third value, 'unknown' (the verifier cannot tell: no committed
    answer, an undecidable comparison, verifiers that disagree), with the reason in `verdict_reason`
    and each verifier's reading in `verdict_readings`. DuckDB cannot alter a CHECK constraint, so the
    table is rebuilt from its own catalog definition (columns other migrations added are kept), rows
    copied as they are."""
    # pairstore's own table: a user's scratch.generations (pairstore sql --write) is not it
    mine = "database_name = current_database() AND schema_name = 'main' AND table_name = 'generations'"
    ddl = con.execute(f"SELECT sql FROM duckdb_tables() WHERE {mine}").fetchall()[0][0]
    old_check = "CHECK((verdict IN ('correct', 'wrong', 'unscored')))"
    if old_check not in ddl:
        raise RuntimeError("generations.verdict's CHECK constraint is not the one m006 replaces")
    ddl = ddl.replace(old_check, "CHECK((verdict IN ('correct', 'wrong', 'unknown', 'unscored')))")
    ddl = ddl.replace("CREATE TABLE generations(", "CREATE TABLE _m006_generations(", 1)
    cols = [
        r[0]
        for r in con.execute(
            f"SELECT column_name FROM duckdb_columns() WHERE {mine} ORDER BY column_index"
        ).fetchall()
    ]
    names = ", ".join(f'"{c}"' for c in cols)
    con.execute(ddl)
    con.execute(f"INSERT INTO _m006_generations ({names}) SELECT {names} FROM generations")
    con.execute("DROP TABLE generations")
    con.execute("ALTER TABLE _m006_generations RENAME TO generations")
    con.execute("""
    ALTER TABLE generations ADD COLUMN verdict_reason VARCHAR;
    ALTER TABLE generations ADD COLUMN verdict_readings JSON;
    """)


def m007_votes_from_the_browser(con: duckdb.DuckDBPyConnection) -> None:
    """Who voted and how the pair was shown: a battle's annotator, the side the own model's answer was shown
    on, the decoding settings and the way it came in; a judgment's annotator, the judge prompt's hash, the
    kind of item judged and the heavy flaws ticked per side."""
    con.execute("""
    ALTER TABLE battles ADD COLUMN annotator VARCHAR;
    ALTER TABLE battles ADD COLUMN own_position VARCHAR;
    ALTER TABLE battles ADD COLUMN decoding JSON;
    ALTER TABLE battles ADD COLUMN origin VARCHAR;
    ALTER TABLE battles ADD COLUMN shown_at TIMESTAMP;
    ALTER TABLE judgments ADD COLUMN annotator VARCHAR;
    ALTER TABLE judgments ADD COLUMN prompt_hash VARCHAR;
    ALTER TABLE judgments ADD COLUMN item_kind VARCHAR;
    ALTER TABLE judgments ADD COLUMN flaws_a VARCHAR[];
    ALTER TABLE judgments ADD COLUMN flaws_b VARCHAR[];
    ALTER TABLE judgments ADD COLUMN origin VARCHAR;
    """)


def m008_keys_of_the_normalization_pipeline(con: duckdb.DuckDBPyConnection) -> None:
    """Match keys and texts recomputed for the normalization pipeline of pairstore.normalize (escapes
    and markup decoded, digits of every script, case folding for every script, number forms, punctuation
    as a word break), for every stored row, holdout member and benchmark n-gram."""
    rekey_stored_rows(con)
    # Members from the item they name where the store has it, else re-normalized from the stored text.
    rows = con.execute("""
        SELECT h.set_name, h.item_id, h.match_text, b.prompt, t.prompt, p.question, e.prompt FROM holdout h
        LEFT JOIN battles b ON h.item_kind = 'battle' AND b.battle_id = h.item_id
        LEFT JOIN tasks t ON h.item_kind = 'task' AND t.task_id = h.item_id
        LEFT JOIN problems p ON h.item_kind = 'problem' AND p.problem_id = h.item_id
        LEFT JOIN (SELECT item_id, any_value(prompt) AS prompt FROM eval_items GROUP BY item_id) e
               ON h.item_kind = 'eval_item' AND e.item_id = h.item_id""").fetchall()
    for set_name, item_id, old_text, battle, task, question, item in rows:
        if battle is not None or item is not None:
            text = match_text([dict(m) for m in (battle if battle is not None else item)])
        elif task is not None or question is not None:
            text = match_text(task if task is not None else question)
        else:
            text = TURN_SEP.join(word_text(t) for t in old_text.split(TURN_SEP))
        con.execute(
            "UPDATE holdout SET match_text = ?, match_key = ? WHERE set_name = ? AND item_id = ?",
            [text, key_of_text(text), set_name, item_id],
        )
    rekey_benchmarks(con)


def m009_normalization_versions(con: duckdb.DuckDBPyConnection) -> None:
    """The normalization that made each table's match keys (`key_versions`, one row per keyed table,
    pairstore.store.rekey), and the text a member added as a text stands for (`holdout.source_text`), so
    re-keying reads the text itself. No row is written here: opening the store finds every keyed table
    without one and re-keys it."""
    con.execute("""
    CREATE TABLE key_versions (
        table_name    VARCHAR PRIMARY KEY,
        normalization VARCHAR NOT NULL,
        keyed_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
    );
    ALTER TABLE holdout ADD COLUMN source_text VARCHAR;
    """)


def m010_pair_keys_kept_by_their_writer(con: duckdb.DuckDBPyConnection) -> None:
    """`pairs` and `pair_origins` without a PRIMARY KEY: DuckDB keeps a key's index in memory whole (it
    cannot spill it), so every write of many pairs, a mine's or an ingest's, grew with the keys it wrote.
    A pair id and an origin's (pair_id, origin_kind, origin_id) stay unique: their one writer adds only
    what is not stored yet (pairstore.tables.pairs, an anti-join in the write's transaction), and
    `pairstore sql --write` refuses a change that repeats one (pairstore.store.sql). The key columns stay
    NOT NULL. Each table is rebuilt from its own catalog definition, rows copied in their order."""
    keys = {
        "pairs": [("pair_id VARCHAR PRIMARY KEY,", "pair_id VARCHAR NOT NULL,")],
        "pair_origins": [
            (
                "(pair_id VARCHAR, origin_kind VARCHAR, origin_id VARCHAR,",
                "(pair_id VARCHAR NOT NULL, origin_kind VARCHAR NOT NULL, origin_id VARCHAR NOT NULL,",
            ),
            (", PRIMARY KEY(pair_id, origin_kind, origin_id))", ")"),
        ],
    }
    _rebuild_without_key(con, "m010", keys)


def _rebuild_without_key(
    con: duckdb.DuckDBPyConnection, tag: str, keys: dict[str, list[tuple[str, str]]]
) -> None:
    """Each table of `keys` rebuilt from its own catalog definition with each (old, new) text replaced in
    it (its PRIMARY KEY dropped), rows copied in their order; `tag` names the migration in errors and in
    the name of the table being built."""
    for table, replacements in keys.items():
        mine = f"database_name = current_database() AND schema_name = 'main' AND table_name = '{table}'"
        ddl = con.execute(f"SELECT sql FROM duckdb_tables() WHERE {mine}").fetchall()[0][0]
        for old, new in replacements:
            if old not in ddl:
                raise RuntimeError(f"{table}'s definition is not the one {tag} rebuilds: {old!r} not in it")
            ddl = ddl.replace(old, new, 1)
        ddl = ddl.replace(f"CREATE TABLE {table}(", f"CREATE TABLE _{tag}_{table}(", 1)
        cols = [
            r[0]
            for r in con.execute(
                f"SELECT column_name FROM duckdb_columns() WHERE {mine} ORDER BY column_index"
            ).fetchall()
        ]
        names = ", ".join(f'"{c}"' for c in cols)
        con.execute(ddl)
        con.execute(f"INSERT INTO _{tag}_{table} ({names}) SELECT {names} FROM {table} ORDER BY rowid")
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE _{tag}_{table} RENAME TO {table}")


def m011_export_rows_kept_by_their_writer(con: duckdb.DuckDBPyConnection) -> None:
    """`export_rows` without its PRIMARY KEY (export_id, row_index), for m010's reason: DuckDB keeps the
    index in memory whole, so an export grew with the rows it registered (about 80 bytes a row: 8 GB for
    a file of 100 million rows). The key stays unique: a file's rows are written only with its new
    `exports` row (whose export_id keeps its key), each row index once (pairstore.export.registry,
    pairstore.export.attach), and `pairstore sql --write` cannot change the table (it is protected).
    The key columns stay NOT NULL."""
    _rebuild_without_key(
        con,
        "m011",
        {
            "export_rows": [
                (
                    "(export_id VARCHAR, row_index BIGINT,",
                    "(export_id VARCHAR NOT NULL, row_index BIGINT NOT NULL,",
                ),
                (", PRIMARY KEY(export_id, row_index))", ")"),
            ]
        },
    )


# The ordered list. Append only.
MIGRATIONS = [
    m001_core,
    m002_views,
    m003_disguise_proof_keys_and_evidence,
    m004_public_sources,
    m005_scratch_schema_for_sql_write,
    m006_three_verdicts,
    m007_votes_from_the_browser,
    m008_keys_of_the_normalization_pipeline,
    m009_normalization_versions,
    m010_pair_keys_kept_by_their_writer,
    m011_export_rows_kept_by_their_writer,
]
SCHEMA_VERSION = len(MIGRATIONS)
