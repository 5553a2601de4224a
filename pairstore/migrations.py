"""Ordered, append-only schema migrations.

Each migration is a function that runs inside one transaction and is recorded
in `schema_version`. Never edit one that has shipped: append a new one.
Table and column names are public interface, documented in docs/schema.md
(tests/test_schema_docs.py fails when a column is undocumented).
"""

from __future__ import annotations

MSG = "STRUCT(role VARCHAR, content VARCHAR)[]"


def m001_core(con):
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
        item_kind      VARCHAR NOT NULL CHECK (item_kind IN ('battle', 'task', 'eval_item', 'problem', 'prompt')),
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


def m002_views(con):
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


def m004_public_sources(con):
    """What the public sources carry besides the core fields: Arena battles' language, moderation flag and
    anonymity; a MATH-500-shaped problem's own id."""
    con.execute("""
    ALTER TABLE battles ADD COLUMN language VARCHAR;
    ALTER TABLE battles ADD COLUMN flagged BOOLEAN;
    ALTER TABLE battles ADD COLUMN anonymous BOOLEAN;
    ALTER TABLE problems ADD COLUMN unique_id VARCHAR;
    """)


# The ordered list. Append only.
MIGRATIONS = [m001_core, m002_views, m004_public_sources]
SCHEMA_VERSION = len(MIGRATIONS)
