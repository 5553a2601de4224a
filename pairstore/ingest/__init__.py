"""Reading what comes in: record, pair and dataset files, Arena and GSM8K/MATH forms, and
the ingest of each table."""
