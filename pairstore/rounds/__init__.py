"""Rounds and their models: recipes, the lineage of rounds, checkpoints."""
