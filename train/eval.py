"""Evaluate a bundle on a suite: greedy answers, scored per item into `evals`.

Suites: GSM8K test, MATH test or MATH-500 from a local file or dataset folder in the datasets' own columns
(question/answer, problem/solution[/answer]) — test splits enter the store here and only here —, a generated
suite already in `eval_items` (the loop suite), or any JSONL/parquet of {id?, prompt, gold?, kind?}. Every
suite's items are written to `eval_items` and registered as benchmark references ("eval:<suite>"), which the
export gate checks, so an evaluated item can never slip into a training mixture.

    pairstore eval --model runs/sm11a --suite gsm8k --path gsm8k_test.jsonl
    pairstore eval --model runs/sm11a --suite lf2
    pairstore eval --model runs/sm11a --suite chat-stop --path chat_prompts.jsonl --name sm11a
    run_eval(store, EvalOptions(model="runs/sm11a", suite="lf2"))

`EvalOptions` is the command's one options object (the generating commands' shared fields from
train.sample.GenerationOptions), carried whole to the generation loop and saved in the store's audit
entry of the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pairstore.errors import BadInput, NotFound
from pairstore.holdout.ngrams import register_benchmark
from pairstore.ingest.dataset_files import read_dataset
from pairstore.ingest.math_problems import problem_fields
from pairstore.ingest.records import Fields
from pairstore.keys import content_id, sha256_text, user_turns
from pairstore.options import check_options, option, options_json
from pairstore.store.store import Store
from pairstore.tables.audit_log import log_action
from pairstore.tables.evals import add_eval_items, replace_scores
from pairstore.tables.generations import insert_generations
from train.sample import VERIFIER_KINDS, GenerationOptions, Item, generate, generation_rows, read_prompt_file
from train.serving import bundle_name, load_serving


@dataclass(frozen=True, kw_only=True)
class EvalOptions(GenerationOptions):
    """`pairstore eval`: greedy answers of a bundle on a suite."""

    suite: str = option(
        help="Suite name: gsm8k / math (with --path to the test file), a suite in eval_items, or any name "
        "with --path FILE."
    )
    path: str | None = option(
        None,
        help="The suite's items: a JSONL, parquet or CSV file, or a Hub or save_to_disk folder (its test "
        "split), in GSM8K columns (question, answer), MATH or MATH-500 columns (problem, solution, "
        "answer?), or {id?, prompt, gold?, kind?}.",
        path=True,
    )


@dataclass
class EvalResult:
    model: str
    suite: str
    items: int
    scored: int
    correct: int
    loop_flagged: int
    loop_catastrophic: int
    empty: int
    mean_output_len: float
    skipped: dict = field(default_factory=dict)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.scored if self.scored else None


def read_suite_file(path, suite: str):
    """Items of a suite file, or of the test split of a dataset folder (pairstore.ingest.dataset_files): GSM8K
    columns, MATH columns (MATH-500's own `answer` is the gold), or {id?, prompt, gold?, kind?} records."""
    records = list(read_dataset(path, split="test"))
    first = records[0]
    if "prompt" in first.record:
        return read_prompt_file(path, item_kind="eval_item", suite=suite)
    if "question" in first.record and "answer" in first.record:
        dataset = "gsm8k"
    elif "problem" in first.record and "solution" in first.record:
        dataset = "math"
    else:
        raise BadInput(
            "expected GSM8K columns (question, answer), MATH columns (problem, solution) or a prompt field",
            path=str(first.path),
            line=first.line,
        )
    items, seen = [], set()
    for r in records:
        p = problem_fields(dataset, Fields(r.record, r.path, r.line))
        item_id = content_id(p.question)
        if item_id in seen:
            continue  # the same question twice is one item
        seen.add(item_id)
        items.append(
            Item("eval_item", item_id, [{"role": "user", "content": p.question}], p.gold, dataset, suite)
        )
    return items


def suite_items(store, suite: str, path=None):

    if path is not None:
        return read_suite_file(path, suite)
    rows = store.rows(
        "SELECT item_id, kind, prompt, gold FROM eval_items WHERE suite = ? ORDER BY item_id", [suite]
    )
    if not rows:
        raise NotFound(f"no eval suite named {suite!r} in the store; give its items with --path FILE")
    return [
        Item(
            "eval_item",
            r["item_id"],
            [dict(m) for m in r["prompt"]],
            r["gold"],
            r["kind"] if r["kind"] in VERIFIER_KINDS else "task",
            suite,
        )
        for r in rows
    ]


def register_suite(store, suite: str, items) -> None:
    """Write the items to eval_items (new ones only) and register the whole suite for the export gate."""
    with store.transaction():
        add_eval_items(
            store,
            suite,
            [{"item_id": it.item_id, "kind": it.kind, "prompt": it.prompt, "gold": it.gold} for it in items],
        )
        # Generated tasks are checked by their task key; their prompts share template phrasing with
        # every other task of the family, so 13-grams would call different tasks leaks of each other.
        rows = store.rows(
            "SELECT item_id, prompt FROM eval_items WHERE suite = ? AND task_key IS NULL ORDER BY item_id",
            [suite],
        )
        if not rows:
            return
        register_benchmark(
            store,
            f"eval:{suite}",
            [(r["item_id"], "\n".join(user_turns([dict(m) for m in r["prompt"]]))) for r in rows],
        )


def run_eval(store: Store, options: EvalOptions, *, model: Any = None) -> EvalResult:
    """Greedy answers of the bundle on the suite, scored per item into `evals` (replacing earlier scores of
    the same model on the same items). `model`: the bundle's model already loaded."""
    options = check_options(options, what="eval")
    suite, path = options.suite, options.path
    if not suite or not suite.strip():
        raise BadInput("suite name is empty", field="suite")
    if path is not None and not Path(path).exists():
        raise BadInput("no such file", path=str(path))
    serving = load_serving(options.model, trust_remote_code=options.trust_remote_code)
    items = suite_items(store, suite, path)
    if options.n is not None:
        items = items[: options.n]
    register_suite(store, suite, items)
    name = options.name or bundle_name(store, options.model)
    outputs, settings = generate(serving, items, options, model=model)
    rows = generation_rows(name, items, outputs, settings, serving)
    rendered = {it.item_id: serving.render(serving.with_system(it.prompt)) for it in items}
    scores = [
        {
            "item_id": r["item_id"],
            "score": None if r["verdict"] == "unscored" else float(r["verdict"] == "correct"),
            "correct": None if r["verdict"] == "unscored" else r["verdict"] == "correct",
            "extracted_answer": r["extracted_answer"],
            "gold": r["gold"],
            "output_len": r["n_tokens"],
            "empty": r["empty"],
            "loop_flagged": r["loop_flagged"],
            "loop_catastrophic": r["loop_catastrophic"],
            "gen_id": r["gen_id"],
            "prompt_hash": sha256_text(rendered[r["item_id"]]),
        }
        for r in rows
    ]
    with store.transaction():
        insert_generations(store, rows)
        replace_scores(store, name, suite, scores)
        log_action(
            store,
            "eval",
            name,
            {"suite": suite, "items": len(rows), "settings": settings, "options": options_json(options)},
        )
    scored = [r for r in rows if r["verdict"] != "unscored"]
    skipped = sum(1 for o in outputs if o is None)
    return EvalResult(
        model=name,
        suite=suite,
        items=len(rows),
        scored=len(scored),
        correct=sum(r["verdict"] == "correct" for r in scored),
        loop_flagged=sum(r["loop_flagged"] for r in rows),
        loop_catastrophic=sum(r["loop_catastrophic"] for r in rows),
        empty=sum(r["empty"] for r in rows),
        mean_output_len=sum(r["n_tokens"] for r in rows) / len(rows) if rows else 0.0,
        skipped={"prompt longer than max_input_tokens": skipped} if skipped else {},
    )
