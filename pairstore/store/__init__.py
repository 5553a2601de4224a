"""The store: one DuckDB file (store.py), its migrations, `pairstore sql` and the one check of user SQL."""
