"""pairstore: the data system behind rounds of DPO from human feedback.

One DuckDB file holds battles, problems, tasks, generations, pairs and their
origins, holdout sets, round recipes, exports and checkpoints. Nothing reaches
a training mixture without passing the holdout gate.

    pairstore ingest battles battles.jsonl
    pairstore holdout sample judge34 --n 34 --seed 7
    pairstore export --round m11a --out mixtures/
"""

__version__ = "0.1.0"
