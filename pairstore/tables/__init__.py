"""The record types that flow between steps, each with the one module that writes its table:
pairs, generations, evals."""
