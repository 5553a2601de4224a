"""`python -m pairstore.cli ...`: the `pairstore` command, for a process started without the console script
(the benchmarks run each contender this way)."""

from pairstore.cli import main

main()
