"""The tables room: the one module that writes each table, named by the table's family
(pairstore/tables/<family>.py), so a table's writer is found from the folder names. The rooms above
(rounds, holdout, ingest, export) check what they are asked and call these; a module here imports only
the base modules, pairstore.store and this room.

The store's own bookkeeping is not here: `schema_version` is written by the store's open as it applies
migrations (pairstore.store.store.migrate) and `key_versions` by re-keying (pairstore.store.rekey), both
below this room and before any table of the data is touched."""

# table -> its family: the module of this package that writes it (tests/test_layers.py checks the source
# against this and docs/design.md, "Tables and their owners").
TABLE_FAMILIES: dict[str, str] = {
    "audit_log": "audit_log",
    "benchmark_ngrams": "benchmarks",
    "benchmark_refs": "benchmarks",
    "checkpoints": "checkpoints",
    "eval_items": "evals",
    "evals": "evals",
    "export_rows": "exports",
    "exports": "exports",
    "generations": "generations",
    "holdout": "holdout",
    "holdout_exemptions": "holdout",
    "holdout_sets": "holdout",
    "ingests": "ingests",
    "pair_origins": "pairs",
    "pairs": "pairs",
    "rounds": "rounds",
    "tasks": "tasks",
}
