"""The labelled verifier corpora of bench/data, read one way for the benchmark and the regression test.

    from verify_rows import corpora, load, verdict_table, EXPECTED
    rows = load(DATA / "verify_outside_outputs.jsonl")  # [{id, pred, gold, kind, equal, tag, options...}]
    verdict_table()                                      # {(corpus, id): (label, reason)} of today's verifier

EXPECTED (bench/data/verify_expected.jsonl) holds the verdict of every labelled row, one per line:
{"corpus", "id", "label", "reason"}, and on a row whose verdict a rule change flipped, "was" (the
verdict before, "label: reason") and "why" (the class of the change). tests/verify/test_verify_regression.py
fails on any row whose verdict differs from it; a rule change that flips rows rewrites it with

    HF_HUB_OFFLINE=1 .venv/bin/python bench/verify_rows.py --write --why flips.json

where flips.json maps "corpus id" to the reason of each flip (a flip without one is refused), so the
commit's diff of that file shows every flip and why. A row no record holds yet (a new corpus) is
recorded as measured, with no "was".
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = BENCH / "data"
EXPECTED = DATA / "verify_expected.jsonl"
# The labelled corpora the verifier was fixed against, in report order; then every held-out corpus:
# each *.jsonl in a folder bench/data/verify_heldout*/ (adding such a folder is enough).
FIXED_CORPORA = (
    "verify_outside_outputs.jsonl",
    "verify_outside_cases.jsonl",
    "verify_audit_round2.jsonl",
    "verify_corpus.jsonl",
)
HELDOUT_GLOB = "verify_heldout*/*.jsonl"
# Held-out corpora the verifier was fixed on after their one held-out measurement: their figures
# since are not held-out figures (bench/data/README.md says what was fixed).
FIXED_AFTER_MEASUREMENT = {
    "verify_heldout/heldout.jsonl",
    "verify_heldout2/heldout.jsonl",
    "verify_heldout3/heldout.jsonl",
    "verify_heldout4/heldout.jsonl",
    "verify_heldout5/heldout.jsonl",
    "verify_heldout6/heldout.jsonl",
    "verify_heldout7/heldout.jsonl",
    "verify_heldout8/heldout.jsonl",
    "verify_heldout9/heldout.jsonl",
    "verify_heldout10/heldout.jsonl",
    "verify_heldout11/heldout.jsonl",
    "verify_heldout12/heldout.jsonl",
    "verify_heldout14/heldout.jsonl",
    "verify_heldout15/heldout.jsonl",
}


def heldout_corpora() -> list[str]:
    """Every held-out corpus present, by folder and file name."""
    return sorted(p.relative_to(DATA).as_posix() for p in DATA.glob(HELDOUT_GLOB))


def is_heldout(name: str) -> bool:
    """A corpus measured on, never fixed against (a held-out folder, not fixed after its measurement)."""
    return name in heldout_corpora() and name not in FIXED_AFTER_MEASUREMENT


def corpora() -> list[str]:
    """The corpora present under bench/data: the fixed ones, then every held-out corpus."""
    return [name for name in FIXED_CORPORA if (DATA / name).exists()] + heldout_corpora()


def load(path: Path) -> list[dict]:
    """Rows as {id, pred, gold, kind, equal, tag, heldout, options}; the regression corpus's older field names
    (output, label, form) are read too."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            try:
                rows.append(
                    {
                        "id": r["id"],
                        "pred": r.get("pred", r.get("output")),
                        "gold": r["gold"],
                        "kind": r["kind"],
                        "equal": bool(r.get("equal", r.get("label"))),
                        "tag": r.get("tag", r.get("form")),
                        "heldout": bool(r.get("heldout")),
                        "source": r.get("source", ""),
                        "options": r.get("options"),  # a multiple-choice problem's options, A first
                    }
                )
            except KeyError as e:
                raise SystemExit(f"{path}:{n}: field {e.args[0]!r} missing") from None
    return rows


def fresh_caches() -> None:
    """Forget every per-input cache of miners.verify, whichever tree it was imported from: parsed golds,
    normalized and parsed answers, the per-text caches. A timed pass then starts as a fresh process
    does after its warm-up: a cache warm from the pass before would skip work a miner's first pass
    over new outputs pays. Setup caches of one entry (math-verify's patterns) stay warm."""
    for name, module in list(sys.modules.items()):
        if name == "miners.verify" or name.startswith("miners.verify."):
            for obj in list(vars(module).values()):
                info = getattr(obj, "cache_info", None)
                if callable(info) and getattr(obj, "__module__", None) == name and info().maxsize != 1:
                    obj.cache_clear()


# math-verify's caches keyed by an input's text (math_verify/parser.py); its pattern builders
# (lazy_*_regex: one entry per extraction config) are setup and stay warm
MATH_VERIFY_INPUT_CACHES = ("parse_latex_cached", "parse_expr_cached", "extract_latex")


def fresh_shared_caches() -> None:
    """Forget the per-input caches both verifiers share: sympy's cache of the expressions it built
    (sympy.core.cache) and math-verify's caches of the texts it parsed. A benchmark calls this
    before every timed pass of either verifier: without it, the pass after one over the same rows
    found its LaTeX parses and sympy's results still cached -- math-verify its own from its pass
    before, ours the ones math-verify's pass left or evicted -- a warmth no pass over new outputs
    has, and one that depended on which verifier ran last."""
    import math_verify.parser
    from sympy.core.cache import clear_cache

    clear_cache()
    for name in MATH_VERIFY_INPUT_CACHES:
        cached = getattr(math_verify.parser, name, None)
        if cached is not None and callable(getattr(cached, "cache_clear", None)):
            cached.cache_clear()


# math-verify's time bounds while the table is made: generous, so that no verdict depends on how
# loaded the machine is (the benchmark keeps the verifier's own bounds)
GENEROUS_TIMEOUT_S = 30.0


def verdict_table(names: list[str] | None = None) -> dict[tuple[str, str], tuple[str, str]]:
    """{(corpus, row id): (label, reason)} from one Verifier over every row of the corpora."""
    sys.path.insert(0, str(ROOT))
    from miners.verify import Verifier, symbolic

    symbolic.SYMBOLIC_TIMEOUT_S = symbolic.OUTPUT_TIMEOUT_S = GENEROUS_TIMEOUT_S

    logging.disable(logging.WARNING)  # math-verify logs its timeouts; the verdicts are what counts
    verifier = Verifier()
    out = {}
    for name in names or corpora():
        for r in load(DATA / name):
            v = verifier.verify(r["pred"], r["gold"], r["kind"], options=r["options"])
            out[(name, r["id"])] = (v.label, v.reason)
    return out


def read_records(path: Path = EXPECTED) -> dict[tuple[str, str], dict]:
    """Every record of the expected-verdicts file, whole (with "was" and "why" where a row flipped)."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                out[(r["corpus"], r["id"])] = r
    return out


def read_expected(path: Path = EXPECTED) -> dict[tuple[str, str], tuple[str, str]]:
    return {k: (r["label"], r["reason"]) for k, r in read_records(path).items()}


def expected_records(table: dict, previous: dict[tuple[str, str], dict], why: dict[str, str]) -> list[dict]:
    """The records for today's verdicts: a flip (a verdict unlike the previous record's) carries the
    verdict it was and why it flipped -- a flip with no reason in `why` ("corpus id" -> reason) is
    refused; an unchanged row keeps its record; a row no record held is recorded as measured."""
    out, unexplained = [], []
    for (c, i), (label, reason) in sorted(table.items()):
        record = {"corpus": c, "id": i, "label": label, "reason": reason}
        before = previous.get((c, i))
        if before is not None and (before["label"], before["reason"]) != (label, reason):
            key = f"{c} {i}"
            if key not in why:
                unexplained.append(key)
            record |= {"was": f"{before['label']}: {before['reason']}", "why": why.get(key, "")}
        elif before is not None and "was" in before:
            record |= {"was": before["was"], "why": before["why"]}
        out.append(record)
    if unexplained:
        raise SystemExit(
            f"{len(unexplained)} flips without a reason in --why (first: {', '.join(unexplained[:5])})"
        )
    return out


def write_expected(table: dict, path: Path = EXPECTED, why: dict[str, str] | None = None) -> None:
    sys.path.insert(0, str(ROOT))
    from pairstore.files import atomic_write_text

    previous = read_records(path) if path.exists() else {}
    records = expected_records(table, previous, why or {})
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    atomic_write_text(path, "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help=f"rewrite {EXPECTED.relative_to(ROOT)}")
    ap.add_argument(
        "--why", type=Path, help='with --write: a JSON file {"corpus id": "why it flipped"} for every flip'
    )
    args = ap.parse_args(argv)
    table = verdict_table()
    if args.write:
        why = json.loads(args.why.read_text(encoding="utf-8")) if args.why else {}
        write_expected(table, why=why)
        print(f"wrote {len(table)} verdicts to {EXPECTED.relative_to(ROOT)}")
        return 0
    expected = read_expected()
    flips = {k: (expected.get(k), v) for k, v in table.items() if expected.get(k) != v}
    for (c, i), (was, now) in sorted(flips.items()):
        print(f"{c} {i}: {was} -> {now}")
    print(f"{len(flips)} of {len(table)} rows differ from {EXPECTED.relative_to(ROOT)}")
    return 1 if flips else 0


if __name__ == "__main__":
    raise SystemExit(main())
