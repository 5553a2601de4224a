"""The export of a round: plan the mixture, gate it, write parquet and evidence, register
it; attach outside files."""
