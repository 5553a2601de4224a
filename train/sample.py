"""Answer problems, tasks or prompts with a bundle, the way it is served, and store every output.

The prompt is the bundle's system prompt plus the item, rendered with its chat template (generation prompt
on, thinking off), tokenized as the model card does; generation stops on the bundle's EOS ids after at most
its max_new_tokens. Greedy by default; `--samples K --temperature T --seed S` draws K answers per item for
self-repair mining, seeded per item (torch.manual_seed of a hash of the seed and the item id), so the same
command gives the same answers. Decoding knobs (repetition_penalty, no_repeat_ngram_size) come from the
bundle's serving_config.json `decoding` object or from flags, and are recorded with every output.
Each output becomes a `generations` row with its settings, the verifier's verdict and the loop scanner's
flags. transformers generates by default; vLLM does when it is installed and a GPU is present.

    pairstore train sample --model runs/sm11a --items gsm8k --n 200
    pairstore train sample --model runs/sm11a --items tasks --samples 4 --temperature 0.8 --seed 1
    pairstore train sample --model runs/sm11a --items prompts.jsonl --repetition-penalty 1.05
    pairstore train sample --model runs/sm11a --items tasks --ray-address local --workers 2  # sample_ray.py
    sample(store, SampleOptions(model="runs/sm11a", items="gsm8k", n=200))

`SampleOptions` is the command's one options object (each flag declared once, pairstore.options; the
fields every generating command shares are GenerationOptions'), carried whole to the generation loop
and saved in the store's audit entry of the run. In a log file the loop writes a line every
PAIRSTORE_PROGRESS_EVERY seconds with its count, rate and time left (pairstore.progress).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xxhash

from audits.loops import scan
from miners.verify import Verifier, extract_answer, verify
from pairstore.errors import BadInput, NotFound
from pairstore.ingest.records import read_records
from pairstore.keys import canonical_messages, messages_content_id
from pairstore.options import check_options, option, options_json
from pairstore.progress import current as current_progress
from pairstore.store.store import Store
from pairstore.tables.audit_log import log_action
from pairstore.tables.generations import generation_id, insert_generations
from train.serving import DECODING_KEYS, Serving, bundle_name, load_model, load_serving

VERIFIER_KINDS = ("gsm8k", "math", "task")


@dataclass(frozen=True, kw_only=True)
class GenerationOptions:
    """What every command that answers with a bundle takes (`train sample`, `eval`)."""

    model: str = option(help="The bundle to answer with.", path=True)
    name: str | None = option(
        None, help="Model name for the stored outputs (default: the bundle's checkpoint name)."
    )
    n: int | None = option(None, help="Only the first N items.", min=1)
    max_new_tokens: int | None = option(None, help="Override the bundle's max_new_tokens.", min=1)
    engine: str = option(
        "auto",
        help="auto: vLLM when installed with a GPU, else transformers.",
        choices=("auto", "transformers", "vllm"),
    )
    trust_remote_code: bool = option(False, help="Allow the bundle's own Python code (off by default).")


@dataclass(frozen=True, kw_only=True)
class SampleOptions(GenerationOptions):
    """`pairstore train sample`."""

    items: str = option(
        help="gsm8k | math (train problems) | tasks | a JSONL/parquet of {id?, prompt, gold?, kind?}."
    )
    samples: int = option(1, help="Answers per item.", min=1)
    temperature: float = option(0.0, help="0 = greedy.", min=0)
    seed: int = option(0, help="Sampling seed (per item: hash of seed, id).", seed=True)
    repetition_penalty: float | None = option(
        None, help="Decoding knob (default: the bundle's serving_config decoding, else off)."
    )
    no_repeat_ngram_size: int | None = option(
        None, help="Decoding knob (default: the bundle's serving_config decoding, else off).", min=1
    )
    ray_address: str | None = option(
        None,
        help="Sample on a Ray cluster at this address ('local': start one here); needs the scale extra.",
        metavar="ADDR",
    )
    workers: int = option(1, help="Ray workers, one transformers engine each (with --ray-address).", min=1)
    shard_items: int = option(32, help="Items per shard file (with --ray-address).", min=1)
    work_dir: str | None = option(
        None,
        help="Folder of the shard files, seen by every worker (default: beside the store, named by the run).",
        path=True,
    )

    @property
    def sampling(self) -> Sampling:
        return Sampling(
            samples=self.samples,
            temperature=self.temperature,
            seed=self.seed,
            decoding={
                "repetition_penalty": self.repetition_penalty,
                "no_repeat_ngram_size": self.no_repeat_ngram_size,
            },
        )


@dataclass(frozen=True)
class Sampling:
    """How answers are drawn: K per item at a temperature with a seed, and decoding knobs (None: the
    bundle's). GREEDY is one answer per item, the most likely one (what `eval` uses)."""

    samples: int = 1
    temperature: float = 0.0
    seed: int = 0
    decoding: dict = field(default_factory=dict)


GREEDY = Sampling()


@dataclass
class Item:
    item_kind: str  # problem | task | eval_item | prompt (generations.item_kind)
    item_id: str
    prompt: list[dict]  # messages, without the bundle's system prompt
    gold: str | None
    kind: str  # the verifier's kind: gsm8k | math | task
    suite: str | None = None


@dataclass
class Output:
    text: str
    n_tokens: int
    stopped: bool  # ended on an EOS id (False: ran into max_new_tokens)


@dataclass
class SampleResult:
    model: str
    items: int
    generations: int
    added: int
    verdicts: dict = field(default_factory=dict)
    loop_flagged: int = 0
    skipped: dict = field(default_factory=dict)
    gen_ids: list[str] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)


# ---------------------------------------------------------------------------- items


def load_items(store, items: str, n: int | None = None) -> list[Item]:
    """'gsm8k' | 'math' (train problems), 'tasks' (generated training tasks), or a JSONL/parquet of
    {id?, prompt, gold?, kind?} records."""
    if n is not None and n < 1:
        raise BadInput(f"--n must be positive, got {n}", field="n")
    limit = "" if n is None else f" LIMIT {int(n)}"
    if items in ("gsm8k", "math"):
        rows = store.rows(
            f"SELECT problem_id, question, gold FROM problems WHERE dataset = ? ORDER BY problem_id{limit}",
            [items],
        )
        if not rows:
            raise NotFound(
                f"no {items} problems in the store (run `pairstore ingest problems {items}` first)"
            )
        return [
            Item("problem", r["problem_id"], [{"role": "user", "content": r["question"]}], r["gold"], items)
            for r in rows
        ]
    if items == "tasks":
        # Tasks written for an eval suite are evaluation items, not material for training pairs.
        rows = store.rows(
            f"SELECT task_id, prompt, gold FROM tasks WHERE suite IS NULL ORDER BY task_id{limit}"
        )
        if not rows:
            raise NotFound("no generated tasks in the store (run `pairstore generate tasks` first)")
        return [
            Item("task", r["task_id"], [{"role": "user", "content": r["prompt"]}], r["gold"], "task")
            for r in rows
        ]
    path = Path(items)
    if not path.exists():
        raise BadInput(
            "expected gsm8k, math, tasks or a JSONL/parquet file of prompts; no such file", path=items
        )
    out = read_prompt_file(path, item_kind="prompt")
    return out[:n] if n is not None else out


def read_prompt_file(path, *, item_kind: str, suite: str | None = None) -> list[Item]:
    """Items from {id?, prompt (string or messages), gold?, kind?} records; ids default to the prompt's
    content id."""

    out, seen = [], set()
    for line, rec in read_records(path):
        prompt = canonical_messages(rec.get("prompt"), where="prompt", path=path, line=line)
        gold = rec.get("gold")
        if gold is not None and not isinstance(gold, (str, int, float)):
            raise BadInput("expected a string or number", path=str(path), line=line, field="gold")
        kind = rec.get("kind") or "task"
        if kind not in VERIFIER_KINDS:
            raise BadInput(
                f"unknown kind {kind!r} (expected one of {', '.join(VERIFIER_KINDS)})",
                path=str(path),
                line=line,
                field="kind",
            )
        item_id = rec.get("id")
        if item_id is None:
            item_id = messages_content_id(prompt)
        elif not isinstance(item_id, (str, int)):
            raise BadInput("expected a string id", path=str(path), line=line, field="id")
        item_id = str(item_id)
        if item_id in seen:
            raise BadInput(f"id {item_id!r} appears twice", path=str(path), line=line, field="id")
        seen.add(item_id)
        out.append(Item(item_kind, item_id, prompt, None if gold is None else str(gold), kind, suite))
    return out


# ---------------------------------------------------------------------------- generation


def item_seed(seed: int, item_id: str) -> int:
    """The per-item torch seed: stable across runs, processes and Python versions."""
    return xxhash.xxh64_intdigest(f"{seed}\x1f{item_id}".encode()) & ((1 << 63) - 1)


def decoding_settings(serving, decoding: dict | None) -> dict:
    """The bundle's serving_config decoding object, overridden by flags (None values ignored)."""
    merged = dict(serving.decoding)
    for k, v in (decoding or {}).items():
        if k not in DECODING_KEYS:
            raise BadInput(
                f"unknown decoding knob {k!r} (expected one of {', '.join(DECODING_KEYS)})", field=k
            )
        if v is not None:
            merged[k] = v
    return merged


def _use_vllm(engine: str, decoding: dict) -> bool:
    if engine == "transformers":
        return False
    try:
        import torch
        import vllm  # noqa: F401

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if engine == "vllm" and not available:
        raise BadInput("engine vllm needs the vllm package and a GPU", field="engine")
    # vLLM has no no_repeat_ngram_size: those runs go through transformers.
    return available and "no_repeat_ngram_size" not in decoding


def generate(
    serving: Serving,
    items: list[Item],
    options: GenerationOptions,
    sampling: Sampling = GREEDY,
    *,
    model: Any = None,
) -> tuple[list[list[Output] | None], dict]:
    """K outputs per item (None for an item whose prompt exceeds max_input_tokens) and the settings used."""
    if sampling.samples < 1:
        raise BadInput(f"--samples must be at least 1, got {sampling.samples}", field="samples")
    if sampling.temperature < 0:
        raise BadInput(f"--temperature must not be negative, got {sampling.temperature}", field="temperature")
    if sampling.temperature == 0 and sampling.samples > 1:
        raise BadInput(
            "greedy decoding gives one answer per item; use --temperature above 0 with --samples",
            field="samples",
        )
    knobs = decoding_settings(serving, sampling.decoding)
    max_new = int(options.max_new_tokens or serving.max_new_tokens)
    prompts = []
    for it in items:
        ids = serving.encode(serving.render(serving.with_system(it.prompt)))
        prompts.append(None if serving.max_input_tokens and len(ids) > serving.max_input_tokens else ids)
    vllm = model is None and _use_vllm(options.engine, knobs)
    settings = {
        "engine": "vllm" if vllm else "transformers",
        "do_sample": sampling.temperature > 0,
        "temperature": sampling.temperature,
        "max_new_tokens": max_new,
        "eos_token_id": serving.eos_ids,
        "enable_thinking": serving.enable_thinking,
        "seed": sampling.seed,
        **knobs,
    }
    run = _Generation(serving, items, prompts, options, sampling, knobs, max_new, settings)
    outputs = _generate_vllm(run) if vllm else _generate_transformers(run, model)
    return outputs, settings


@dataclass
class _Generation:
    """One generate() call, as its engines read it."""

    serving: Serving
    items: list[Item]
    prompts: list[list[int] | None]  # token ids per item; None: longer than max_input_tokens
    options: GenerationOptions
    sampling: Sampling
    knobs: dict  # the decoding knobs in force
    max_new: int
    settings: dict  # what is recorded with every output (an engine adds what it sets)


def _cut(serving, new_ids: list[int]) -> Output:
    stop = next((i for i, t in enumerate(new_ids) if t in serving.eos_ids), None)
    kept = new_ids if stop is None else new_ids[:stop]
    return Output(serving.tokenizer.decode(kept, skip_special_tokens=True), len(kept), stop is not None)


def _generate_transformers(run: _Generation, model: Any) -> list[list[Output] | None]:
    import torch

    serving, sampling = run.serving, run.sampling
    if model is None:
        model = load_model(
            serving.path,
            trust_remote_code=run.options.trust_remote_code,
            device="cuda" if torch.cuda.is_available() else None,
        )
    model.eval()
    pad = serving.pad_id if serving.pad_id is not None else serving.eos_ids[0]
    kwargs = {
        "max_new_tokens": run.max_new,
        "eos_token_id": serving.eos_ids,
        "pad_token_id": pad,
        "do_sample": sampling.temperature > 0,
        "num_return_sequences": sampling.samples,
    }
    if sampling.temperature > 0:
        kwargs["temperature"] = sampling.temperature
        gen_cfg = model.generation_config
        run.settings["top_p"] = getattr(gen_cfg, "top_p", None)
        run.settings["top_k"] = getattr(gen_cfg, "top_k", None)
    kwargs.update(run.knobs)
    if sampling.temperature <= 0 and sampling.samples == 1:
        return _greedy_batched(serving, model, run.prompts, kwargs, pad)
    outputs: list[list[Output] | None] = []
    todo = list(zip(run.items, run.prompts))
    for it, ids in current_progress().track(todo, "generate", unit="prompts"):
        if ids is None:
            outputs.append(None)
            continue
        torch.manual_seed(item_seed(sampling.seed, it.item_id))
        input_ids = torch.tensor([ids], device=model.device)
        with torch.no_grad():
            seqs = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
        outputs.append([_cut(serving, s[len(ids) :].tolist()) for s in seqs])
    return outputs


GREEDY_BATCH = 16


def greedy_batched(model, prompts: list, kwargs: dict, pad: int, batch: int = GREEDY_BATCH) -> list:
    """Greedy decoding in left-padded batches of similar length (no randomness, so batching is free to
    reorder; sampling keeps one call per item for per-item seeds). Per prompt (a list of ids, or None to
    skip): the new ids after it, or None."""
    outputs: list = [None] * len(prompts)
    todo = sorted((i for i, ids in enumerate(prompts) if ids is not None), key=lambda i: (len(prompts[i]), i))
    with current_progress().stage("generate (greedy)", total=len(todo), unit="prompts") as stage:
        for start in range(0, len(todo), batch):
            rows = todo[start : start + batch]
            _greedy_batch(model, prompts, kwargs, pad, rows, outputs)
            stage.advance(len(rows))
    return outputs


def _greedy_batch(model, prompts: list, kwargs: dict, pad: int, rows: list[int], outputs: list) -> None:
    """One left-padded batch of greedy_batched: the new ids of prompts `rows` into `outputs`."""
    import torch

    width = max(len(prompts[i]) for i in rows)
    ids = torch.tensor([[pad] * (width - len(prompts[i])) + prompts[i] for i in rows], device=model.device)
    mask = torch.tensor(
        [[0] * (width - len(prompts[i])) + [1] * len(prompts[i]) for i in rows], device=model.device
    )
    with torch.no_grad():
        seqs = model.generate(input_ids=ids, attention_mask=mask, **kwargs)
    for i, seq in zip(rows, seqs):
        outputs[i] = seq[width:].tolist()


def _greedy_batched(serving, model, prompts, kwargs, pad: int):
    return [
        None if new is None else [_cut(serving, new)] for new in greedy_batched(model, prompts, kwargs, pad)
    ]


# Prompts per vLLM call: large enough to keep its batching full, small enough for a progress line.
VLLM_CHUNK = 512


def _generate_vllm(run: _Generation) -> list[list[Output] | None]:
    from vllm import LLM, SamplingParams

    serving, sampling = run.serving, run.sampling
    llm = LLM(
        model=str(serving.path),
        tokenizer=str(serving.path),
        trust_remote_code=run.options.trust_remote_code,
        seed=sampling.seed,
        dtype="bfloat16",
    )
    todo = [(i, ids) for i, ids in enumerate(run.prompts) if ids is not None]
    penalty = run.knobs.get("repetition_penalty")
    params = [
        SamplingParams(
            n=sampling.samples,
            temperature=sampling.temperature,
            seed=item_seed(sampling.seed, run.items[i].item_id),
            max_tokens=run.max_new,
            stop_token_ids=serving.eos_ids,
            skip_special_tokens=True,
            **({} if penalty is None else {"repetition_penalty": penalty}),
        )
        for i, _ in todo
    ]
    outputs: list[list[Output] | None] = [None] * len(run.prompts)
    with current_progress().stage("generate (vLLM)", total=len(todo), unit="prompts") as stage:
        for start in range(0, len(todo), VLLM_CHUNK):
            chunk = todo[start : start + VLLM_CHUNK]
            results = llm.generate(
                [{"prompt_token_ids": ids} for _, ids in chunk], params[start : start + VLLM_CHUNK]
            )
            for (i, _), res in zip(chunk, results):
                outputs[i] = [_cut(serving, list(c.token_ids)) for c in res.outputs]
            stage.advance(len(chunk))
    return outputs


# ---------------------------------------------------------------------------- scoring and storing


def judge(
    text: str, gold: str | None, kind: str, verifier: Verifier | None = None
) -> tuple[str | None, str, str | None]:
    """(extracted answer, verdict, reason) with the project's verifier: correct, wrong, unknown (it
    cannot tell), or unscored without a gold."""
    if gold is None:
        return extract_answer(text, kind), "unscored", None
    verdict = verify(text, gold, kind, verifier)
    return verdict.answer, verdict.label, verdict.reason


def generation_rows(model_name: str, items: list[Item], outputs, settings: dict, serving) -> list[dict]:

    rows = []
    verifier = Verifier()  # one cache over every sample of every item
    decoding = json.dumps({**settings, "bundle": str(Path(serving.path).resolve())}, sort_keys=True)
    for it, outs in zip(items, outputs):
        if outs is None:
            continue
        prompt = serving.with_system(it.prompt)
        for index, out in enumerate(outs):
            extracted, verdict, reason = judge(out.text, it.gold, it.kind, verifier)
            report = scan(out.text)
            rows.append(
                {
                    "gen_id": generation_id(
                        model_name, it.item_kind, it.item_id, index, settings["temperature"], out.text
                    ),
                    "model": model_name,
                    "item_kind": it.item_kind,
                    "item_id": it.item_id,
                    "suite": it.suite,
                    "prompt": prompt,
                    "output": out.text,
                    "sample_index": index,
                    "temperature": settings["temperature"],
                    "top_p": settings.get("top_p"),
                    "max_new_tokens": settings["max_new_tokens"],
                    "seed": settings["seed"],
                    "decoding": decoding,
                    "extracted_answer": extracted,
                    "verdict": verdict,
                    "verdict_reason": reason,
                    "loop_flagged": bool(report.flagged),
                    "loop_catastrophic": bool(report.catastrophic),
                    "loop_tail": bool(report.tail_loop),
                    "max_repeat": int(report.max_repeat),
                    "n_tokens": out.n_tokens,
                    "empty": not out.text.strip(),
                    "gold": it.gold,
                }
            )
    return rows


def sample(
    store: Store, options: SampleOptions, *, items: list[Item] | None = None, model: Any = None
) -> SampleResult:
    """Answer the items `options.items` names (or `items` given here) with the bundle and store the
    generations (see the module docstring). `model`: the bundle's model already loaded. With
    `options.ray_address` Ray workers answer the items in shards (train.sample_ray)."""
    options = check_options(options, what="train sample")
    if options.ray_address is not None:
        if model is not None:
            raise BadInput("a loaded model cannot be shipped to Ray workers", field="ray_address")
        from train.sample_ray import sample_on_ray

        return sample_on_ray(store, options, items=items)
    for flag, value, default in (("workers", options.workers, 1), ("work_dir", options.work_dir, None)):
        if value != default:
            raise BadInput(f"--{flag.replace('_', '-')} needs --ray-address", field=flag)
    serving = load_serving(options.model, trust_remote_code=options.trust_remote_code)
    todo = load_items(store, options.items, options.n) if items is None else list(items)
    name = options.name or bundle_name(store, options.model)
    outputs, settings = generate(serving, todo, options, options.sampling, model=model)
    rows = generation_rows(name, todo, outputs, settings, serving)
    with store.transaction():
        added = insert_generations(store, rows)
        log_action(
            store,
            "sample",
            name,
            {"generations": len(rows), "added": added, "options": options_json(options)},
        )
    return sample_result(name, todo, sum(1 for o in outputs if o is None), rows, added)


def sample_result(name: str, todo: list[Item], skipped: int, rows: list[dict], added: int) -> SampleResult:
    """What a sampling run reports: counts by verdict, loop flags, items skipped (prompt too long)."""
    verdicts: dict[str, int] = {}
    for r in rows:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    return SampleResult(
        name,
        len(todo),
        len(rows),
        added,
        verdicts,
        sum(r["loop_flagged"] for r in rows),
        {"prompt longer than max_input_tokens": skipped} if skipped else {},
        [r["gen_id"] for r in rows],
        rows,
    )
