"""A tiny chat model that knows something: a character-level Llama trained from scratch on verifiable tasks.

The demo's incumbent (so7a) has to answer the demo's tasks well enough that one round of the loop
(sample, verify, mine, DPO+NLL, merge, soup) can be seen to move it. This module holds everything that
model is made of, small enough to read in one sitting:

- a character tokenizer (one token per character, plus the chat template's special tokens), saved as
  tokenizer.json + tokenizer_config.json with tokenizer_class "PreTrainedTokenizerFast", which
  transformers 4.x and 5.x both load;
- the serving files every bundle has (train.tiny's ChatML template, system_prompt.txt,
  generation_config.json, serving_config.json), so train.sample, train.eval, train.dpo, merge and
  soup use it unchanged;
- the training data: tasks of the generators/ families (the shipped incumbent learns short_arithmetic,
  two-digit sums and differences), gold answers computed by code, the answer in the families' canonical
  form (worked answer, then "Final answer: X", what miners.verify reads); tasks whose key is held out
  (the demo's suite and training tasks, and the probe) are never drawn;
- a plain training loop (AdamW, loss on the answer only, every random draw seeded) that evaluates
  greedy accuracy on a held-out probe set and writes a bundle, its config inside.

    python scripts/train_demo_model.py --out runs/so7a      # the demo's incumbent, pairstore/sample_data/so7a
    from train.tiny_chat import TrainConfig, train; train(TrainConfig(steps=20), "runs/t")
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from generators.registry import FAMILIES
from generators.rng import HashRng
from generators.tasks import generate_tasks
from miners.verify import is_equivalent
from pairstore.files import atomic_write_json, atomic_write_text
from train.bundle import EVIDENCE_FILE, make_portable
from train.dpo import library_versions
from train.sample import greedy_batched
from train.tiny import BOS, CHAT_TEMPLATE, EOS, IM_END, PAD, SPECIAL_TOKENS

UNK = "<unk>"
# Every printable ASCII character and the newline, plus the few others the generators write.
CHARS = "\n" + "".join(chr(c) for c in range(0x20, 0x7F)) + "×÷−→…≤"
# Whole-word tokens: the template's role names and the prefix every answer ends with. Each would otherwise
# cost a token per character in every sequence trained on and every answer decoded (a third of a short
# arithmetic example); the text they stand for decodes unchanged.
WORDS = ("system", "user", "assistant", "Final answer: ")
# Short, because every training sequence carries it (the answer format is learned from the answers).
SYSTEM_PROMPT = "Be exact."
CONFIG_FILE = "tiny_chat_config.json"

# The demo's tasks (generators.tasks.generate_loopfix at difficulty 2): the held-out suite is generated
# first under DEMO_SEED, then the training tasks the incumbent samples on under DEMO_SEED + 1. The incumbent's
# own training stream never draws a task key of either (TrainConfig.exclude_generated).
DEMO_SEED = 12076  # m11a's job id, as the shipped recipes use it
DEMO_FAMILIES = ("short_arithmetic",)
DEMO_DIFFICULTY = 2
DEMO_SUITE_N = 240
DEMO_TRAIN_N = 120


# -- tokenizer ------------------------------------------------------------------------------------------


def make_tokenizer():
    """One token per character (CHARS) and per word of WORDS, the special tokens of train.tiny first (ids 0..5),
    <unk> for any other character."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS + list(CHARS) + list(WORDS))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every character alone
    tok.decoder = decoders.Fuse()  # ids back to text with nothing between the characters
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.add_tokens([AddedToken(w, normalized=False) for w in WORDS])  # matched before the split
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=IM_END,
        pad_token=PAD,
        unk_token=UNK,
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
    )  # " ." must stay " ."


# -- configuration -----------------------------------------------------------------------------------------


@dataclass
class TrainConfig:
    """Everything that decides the trained weights (saved in every checkpoint as tiny_chat_config.json)."""

    seed: int = 12076
    # (family, difficulty, weight): what the training stream draws from
    mix: list = field(default_factory=lambda: [["short_arithmetic", 2, 1]])
    # model
    n_layer: int = 3
    n_embd: int = 128
    n_head: int = 4
    intermediate: int = 384
    max_positions: int = 512
    # optimization
    steps: int = 1800  # just past the jump in probe accuracy: right often enough, wrong often enough
    batch: int = 64
    lr: float = 2e-3
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    threads: int = 2
    # held-out probe (greedy accuracy every eval_every steps; its task keys never drawn for training)
    eval_every: int = 100
    probe_seed: int = 7
    probe_per_family: int = 200
    max_new_tokens: int = 48
    # stop at the first evaluation whose probe accuracy reaches this (None: train all steps)
    stop_at_accuracy: float | None = None
    # also write the bundle at every evaluation, to out_dir/step-N (to pick a checkpoint afterwards)
    save_every_eval: bool = False
    # generate_tasks calls [seed, n, families, difficulty] whose task keys the stream never draws, made in
    # order, each excluding the keys of those before it, as the demo's generate_loopfix calls do
    exclude_generated: list = field(default_factory=lambda: demo_task_calls())
    system_prompt: str = SYSTEM_PROMPT

    def to_json(self) -> dict:
        return asdict(self)


# -- data --------------------------------------------------------------------------------------------------


def demo_task_calls() -> list:
    """The demo's two task generations as [seed, n, families, difficulty]: the held-out suite, then the
    training tasks the incumbent samples on."""
    families = list(DEMO_FAMILIES)
    return [
        [DEMO_SEED, DEMO_SUITE_N, families, DEMO_DIFFICULTY],
        [DEMO_SEED + 1, DEMO_TRAIN_N, families, DEMO_DIFFICULTY],
    ]


def demo_tasks(calls: list | None = None) -> list[list]:
    """The tasks of each call of demo_task_calls(), made in order, each avoiding the keys before it (what
    generate_loopfix does on the demo's store: the suite first, then training tasks that avoid its keys)."""
    keys: set[str] = set()
    out = []
    for seed, n, families, difficulty in calls if calls is not None else demo_task_calls():
        tasks = generate_tasks(seed, n, list(families), keys, difficulty=difficulty)
        keys.update(t.task_key for t in tasks)
        out.append(tasks)
    return out


def generated_keys(calls: list) -> set[str]:
    return {t.task_key for tasks in demo_tasks(calls) for t in tasks}


def held_out_keys(cfg: TrainConfig) -> set[str]:
    """Task keys training never sees: the demo's tasks (held-out suite and training tasks) and the probe set."""
    demo = generated_keys(cfg.exclude_generated)
    return demo | {t.task_key for t in probe_tasks(cfg, demo)}


def probe_tasks(cfg: TrainConfig, exclude: set[str]):
    """probe_per_family distinct tasks of each family in the mix under probe_seed, none with a key in `exclude`
    (the demo's tasks: choosing a checkpoint by the probe must not look at the demo's suite)."""
    out = []
    for name, difficulty, _ in cfg.mix:
        fam, draw = FAMILIES[name], 0
        seen: set[str] = set()
        while len(seen) < cfg.probe_per_family:
            t = fam.make(cfg.probe_seed, draw, difficulty)
            draw += 1
            if t.task_key not in seen and t.task_key not in exclude:
                seen.add(t.task_key)
                out.append(t)
    return out


class TaskStream:
    """Training tasks drawn from the mix: step s, slot i picks a family by a hash of (seed, s, i); each family
    then takes its next draw whose key is not held out. Same config, same stream, on every Python."""

    def __init__(self, cfg: TrainConfig, exclude: set[str]):
        self.cfg, self.exclude = cfg, exclude
        self.total = sum(w for _, _, w in cfg.mix)
        self.next_draw = [0] * len(cfg.mix)

    def pick(self, step: int, slot: int) -> int:
        r = HashRng(self.cfg.seed, "mix", step, slot).below(self.total)
        for i, (_, _, w) in enumerate(self.cfg.mix):
            if r < w:
                return i
            r -= w
        raise AssertionError("unreachable")

    def task(self, step: int, slot: int):
        i = self.pick(step, slot)
        name, difficulty, _ = self.cfg.mix[i]
        fam = FAMILIES[name]
        while True:
            t = fam.make(self.cfg.seed, self.next_draw[i], difficulty)
            self.next_draw[i] += 1
            if t.task_key not in self.exclude:
                return t

    def batch(self, step: int):
        return [self.task(step, slot) for slot in range(self.cfg.batch)]


def render_prompt(tokenizer, prompt: str, system_prompt: str = SYSTEM_PROMPT) -> str:
    """The prompt exactly as train.serving renders it: system prompt, user turn, generation prompt."""
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": prompt}]
    return tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )


def encode(tokenizer, prompt: str, answer: str, system_prompt: str = SYSTEM_PROMPT) -> tuple[list[int], int]:
    """(ids of prompt + answer + <|im_end|>, number of prompt ids): the loss is on the answer part only."""
    p = tokenizer(render_prompt(tokenizer, prompt, system_prompt), add_special_tokens=False)["input_ids"]
    a = tokenizer(answer + IM_END, add_special_tokens=False)["input_ids"]
    return p + a, len(p)


def collate(examples: list[tuple[list[int], int]], pad_id: int):
    """Right-padded input ids and labels (-100 on prompt and padding)."""
    import torch

    width = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    for row, (x, n_prompt) in enumerate(examples):
        ids[row, : len(x)] = torch.tensor(x)
        labels[row, n_prompt : len(x)] = torch.tensor(x[n_prompt:])
    return ids, labels


# -- model -------------------------------------------------------------------------------------------------


def model_config(cfg: TrainConfig, tokenizer):
    from transformers import LlamaConfig

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.n_embd,
        intermediate_size=cfg.intermediate,
        num_hidden_layers=cfg.n_layer,
        num_attention_heads=cfg.n_head,
        num_key_value_heads=cfg.n_head,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=False,
        bos_token_id=ids[BOS],
        eos_token_id=[ids[IM_END], ids[EOS]],
        pad_token_id=ids[PAD],
    )


def new_model(cfg: TrainConfig, tokenizer):
    import torch
    from transformers import LlamaForCausalLM

    state = torch.random.get_rng_state()
    torch.manual_seed(cfg.seed)
    try:
        return LlamaForCausalLM(model_config(cfg, tokenizer)).to(torch.float32)  # type: ignore[arg-type]
    finally:
        torch.random.set_rng_state(state)


def greedy_answers(
    model,
    tokenizer,
    prompts: list[str],
    *,
    max_new_tokens: int,
    system_prompt: str = SYSTEM_PROMPT,
    batch: int = 64,
) -> list[str]:
    """Greedy answers in left-padded batches (train.sample's), cut at the first end-of-turn as served."""
    pad = tokenizer.convert_tokens_to_ids(PAD)
    stops = [tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(EOS)]
    encoded = [
        tokenizer(render_prompt(tokenizer, p, system_prompt), add_special_tokens=False)["input_ids"]
        for p in prompts
    ]
    kwargs = {
        "max_new_tokens": max_new_tokens,
        "do_sample": False,
        "eos_token_id": stops,
        "pad_token_id": pad,
    }
    was_training = model.training
    model.eval()
    new_ids = greedy_batched(model, encoded, kwargs, pad, batch=batch)
    model.train(was_training)
    out = []
    for new in new_ids:
        stop = next((k for k, t in enumerate(new) if t in stops), len(new))
        out.append(tokenizer.decode(new[:stop], skip_special_tokens=True))
    return out


def probe_accuracy(model, tokenizer, tasks, cfg: TrainConfig) -> dict:
    """Greedy accuracy on the probe tasks, overall and per family (verified by miners.verify, kind 'task')."""
    answers = greedy_answers(
        model,
        tokenizer,
        [t.prompt for t in tasks],
        max_new_tokens=cfg.max_new_tokens,
        system_prompt=cfg.system_prompt,
    )
    per: dict[str, list[int]] = {}
    for t, a in zip(tasks, answers):
        per.setdefault(t.family, []).append(int(is_equivalent(a, t.gold, "task")))
    fams = {k: sum(v) / len(v) for k, v in per.items()}
    return {"accuracy": sum(sum(v) for v in per.values()) / len(tasks), "per_family": fams}


# -- bundle ------------------------------------------------------------------------------------------------


def save_bundle(model, tokenizer, out_dir, cfg: TrainConfig, *, evidence: dict | None = None) -> Path:
    """A served bundle: safetensors weights, tokenizer, chat template, system prompt, generation and serving
    configs, the training config, and training_evidence.json when given."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    model.generation_config.update(
        bos_token_id=ids[BOS],
        eos_token_id=[ids[IM_END], ids[EOS]],
        pad_token_id=ids[PAD],
        max_new_tokens=cfg.max_new_tokens,
        do_sample=False,
    )
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    atomic_write_text(out / "chat_template.jinja", CHAT_TEMPLATE)
    atomic_write_text(out / "system_prompt.txt", cfg.system_prompt + "\n")
    atomic_write_json(
        out / "serving_config.json",
        {
            "max_input_tokens": cfg.max_positions - cfg.max_new_tokens,
            "add_generation_prompt": True,
            "enable_thinking": False,
            "max_new_tokens": cfg.max_new_tokens,
        },
    )
    atomic_write_json(out / CONFIG_FILE, cfg.to_json())
    if evidence is not None:
        atomic_write_json(out / EVIDENCE_FILE, evidence)
    make_portable(out)  # transformers 4.x (vLLM's) reads it too
    return out


# -- training ----------------------------------------------------------------------------------------------


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warmup, then constant: a checkpoint taken at any step is a fair one (no decay to wait for)."""
    return cfg.lr * min(1.0, (step + 1) / max(1, cfg.warmup))


def train(cfg: TrainConfig, out_dir, *, log=print) -> dict:
    """Train from the seed and write the bundle to out_dir. Returns the evidence (also in the bundle)."""
    import torch

    torch.set_num_threads(cfg.threads)  # the thread count is part of what makes CPU runs repeat bit for bit
    torch.manual_seed(cfg.seed)
    tokenizer = make_tokenizer()
    pad = tokenizer.convert_tokens_to_ids(PAD)
    model = new_model(cfg, tokenizer)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.98),
    )
    demo_keys = generated_keys(cfg.exclude_generated)
    probe = probe_tasks(cfg, demo_keys)
    exclude = demo_keys | {t.task_key for t in probe}
    stream = TaskStream(cfg, exclude)
    history, started, losses = [], time.perf_counter(), []
    stopped_at = None
    for step in range(cfg.steps):
        batch = [encode(tokenizer, t.prompt, t.chosen, cfg.system_prompt) for t in stream.batch(step)]
        ids, labels = collate(batch, pad)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        loss = model(input_ids=ids, attention_mask=(ids != pad).long(), labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append(loss.item())
        done = step + 1
        if done % cfg.eval_every == 0 or done == cfg.steps:
            acc = probe_accuracy(model, tokenizer, probe, cfg)
            row = {
                "step": done,
                "loss": sum(losses) / len(losses),
                "probe_accuracy": acc["accuracy"],
                "per_family": acc["per_family"],
                "seconds": round(time.perf_counter() - started, 1),
            }
            losses = []
            history.append(row)
            log(json.dumps(row))
            if cfg.save_every_eval:
                save_bundle(
                    model, tokenizer, Path(out_dir) / f"step-{done}", cfg, evidence={"history": history}
                )
            if cfg.stop_at_accuracy is not None and acc["accuracy"] >= cfg.stop_at_accuracy:
                stopped_at = done
                break
    evidence = {
        "kind": "tiny_chat",
        "config": cfg.to_json(),
        "steps_trained": history[-1]["step"] if history else 0,
        "stopped_at_accuracy": stopped_at,
        "probe": {"tasks": len(probe), "seed": cfg.probe_seed},
        "held_out_keys": len(exclude),
        "history": history,
        "seconds": round(time.perf_counter() - started, 1),
        "libraries": library_versions(),
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    save_bundle(model, tokenizer, out_dir, cfg, evidence=evidence)
    return evidence
