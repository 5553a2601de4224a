"""Miners: preference pairs from what the store holds, each traceable to its origins and rule.

    pairstore mine list                       # the registered miners (miners.registry)
    pairstore mine battle                     # miners.battle
    pairstore mine self-repair --model M --dataset gsm8k   # miners.self_repair
    pairstore mine loopfix --model M          # miners.loopfix
    pairstore mine style [--model M]          # miners.style

A miner is one module here: its options dataclass and its registered function (miners.registry);
the registry finds the module, `pairstore mine` builds its command. Datasets imported as published
(UltraFeedback, compliance pairs) are ingests: pairstore.ingest.ultrafeedback and .compliance.

Text patterns (identity claims, hedging tails, final-answer lines) live in
miners.patterns; the answer verifier in miners.verify (correct, wrong or unknown:
miners turn only the definite verdicts into pairs, and count the unknowns by reason).
"""
