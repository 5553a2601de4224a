"""Holdout sets and the gate: the sets, normalization, matching (its streaming scan,
benchmark n-grams), the gate."""
