"""Miners: preference pairs from what the store holds, each traceable to its origins and rule.

    pairstore mine list                       # the registered miners (miners.registry)
    pairstore mine battle                     # miners.battle
    pairstore mine self-repair --model M --dataset gsm8k   # miners.self_repair
    pairstore mine loopfix --model M          # miners.loopfix
    pairstore mine style [--model M]          # miners.style
    pairstore mine ultrafeedback --path DIR   # miners.importers
    pairstore mine compliance FILE            # miners.importers

Text patterns (identity claims, hedging tails, final-answer lines) live in
miners.patterns; the answer verifier in miners.verify (correct, wrong or unknown:
miners turn only the definite verdicts into pairs, and count the unknowns by reason).
"""
