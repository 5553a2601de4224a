"""DPO + NLL LoRA training of one round with TRL, on the round's exported mixture.

The objective of the model card: TRL's sigmoid DPO loss (beta from the recipe) plus the NLL (SFT) term on
the chosen answer weighted by the recipe's sft_weight — TRL 1.16 combines the two with
`loss_type=["sigmoid", "sft"]`, `loss_weights=[1.0, sft_weight]` — as PEFT LoRA on the base bundle.
Prompts are rendered with the base bundle's own chat template (thinking off) and every chosen and rejected
answer ends with the end-of-turn EOS token the template closes assistant turns with, exactly as served.

The mixture is the round's latest export; its SHA-256 is checked against the registry before training
(GateRefused, exit 3, when the bytes changed) and again in every training process. The base bundle must
be the recipe's parent (train.dpo_job.check_base; --allow-other-base overrides, recorded in the evidence).

Every logging step (each step up to 50 steps, then every 10th) goes to training_log.jsonl beside the
adapter as one JSON object, and, when stderr is not a terminal (a log file, Slurm, nohup), as one line
with the loss, reward accuracy, margin, rate and time left; `--report-to` passes trackers to TRL.

    pairstore --db store.duckdb train dpo --round m11a --base runs/so7a --out runs/m11a-lora
    pairstore --db store.duckdb train dpo --round m11a --base runs/so7a --out runs/m11a-lora \\
        --launcher accelerate --num-processes 4
    train_dpo(store, DpoOptions(round="m11a", base="runs/so7a", out="runs/m11a-lora"))
    python -m train.dpo --job runs/m11a-lora/pairstore_job.json     # what `accelerate launch` runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pairstore.errors import BadInput, PairstoreError
from pairstore.files import atomic_write_json, missing_folders, remove_empty_folders, write_failure
from pairstore.keys import canonical_messages, sha256_file
from pairstore.options import options_json
from pairstore.rounds.checkpoints import checkpoint_name_for, register_checkpoint
from pairstore.store.store import Store, open_store
from train.bundle import EVIDENCE_FILE, make_portable
from train.bundle_identity import tokenizer_identity
from train.dpo_job import JOB_FILE, DpoOptions, TrainingJob, dpo_options, prepare_job, verify_mixture
from train.launch import run_accelerate
from train.serving import load_model, load_serving
from train.training_log import LOG_FILE, TrainingLog

LIBRARIES = ("torch", "transformers", "peft", "trl", "accelerate", "datasets", "safetensors", "pairstore")


@dataclass
class DpoResult:
    out_dir: Path
    adapter_name: str
    evidence: dict

    @property
    def metrics(self) -> dict:
        return self.evidence.get("final_metrics", {})


# ---------------------------------------------------------------------------- the training process


def mixture_rows(path, serving, sft_path=None) -> dict[str, list[str]]:
    """prompt / chosen / rejected texts from an export's parquet files, rendered the way the bundle is served.

    NLL-only rows (the export's NAME.sft.parquet: prompt, completion) become pairs whose rejected side is
    their chosen side: the DPO term of such a pair is identically zero (the two log-ratios cancel), so it
    trains only through the NLL term, with the recipe's sft_weight, exactly as an NLL row should."""

    out: dict[str, list[str]] = {"prompt": [], "chosen": [], "rejected": []}
    eot = serving.end_of_turn
    sources = ([(path, ("chosen", "rejected"))] if path is not None else []) + (
        [(sft_path, ("completion",))] if sft_path is not None else []
    )
    for file, sides in sources:
        table = pq.read_table(file, columns=["prompt", *sides])
        for i, row in enumerate(table.to_pylist()):
            prompt = canonical_messages(row["prompt"], where="prompt", path=file, line=i + 1)
            answers = []
            for side in sides:
                msgs = row[side]
                if (
                    not msgs
                    or len(msgs) != 1
                    or msgs[0].get("role") != "assistant"
                    or not isinstance(msgs[0].get("content"), str)
                ):
                    raise BadInput(
                        "expected exactly one assistant message", path=str(file), line=i + 1, field=side
                    )
                answers.append(msgs[0]["content"] + eot)
            out["prompt"].append(serving.render(prompt))
            out["chosen"].append(answers[0])
            out["rejected"].append(answers[-1])
    if not out["prompt"]:
        raise BadInput("the mixture has no rows", path=str(path or sft_path))
    return out


def library_versions() -> dict[str, str | None]:

    found: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def _last_checkpoint(out_dir: Path) -> Path | None:
    steps = []
    for p in out_dir.glob("checkpoint-*"):
        suffix = p.name.split("-", 1)[1]
        if p.is_dir() and suffix.isdigit():
            steps.append((int(suffix), p))
    return max(steps)[1] if steps else None


def trains_on_gpu() -> bool:
    """Whether this process trains on the GPU: there is one, and no launcher put the process on the CPU.
    `accelerate launch` with a config that says use_cpu (train/configs/cpu.yaml) sets ACCELERATE_USE_CPU
    and keeps the model on the CPU; a process that still chose the GPU's precision and device sent its
    batches to the GPU, and the first forward pass failed with tensors on two devices (seen on a GPU
    machine)."""
    import torch
    from accelerate.utils import parse_flag_from_env

    return torch.cuda.is_available() and not parse_flag_from_env("ACCELERATE_USE_CPU")


def run_job(job: TrainingJob) -> dict:
    """Train one round (in this process; under `accelerate launch`, in each process). Returns the evidence."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback, TrainerCallback, set_seed
    from trl import DPOConfig, DPOTrainer

    for mixture in (job.mixture, job.sft_mixture):
        if mixture is not None:
            verify_mixture(mixture)
    hp = job.hyperparameters
    actual_world = int(os.environ.get("WORLD_SIZE", "1"))
    if actual_world != hp.world_size:
        raise PairstoreError(
            f"the job was planned for world size {hp.world_size} but runs in {actual_world} "
            "processes; gradient accumulation would not give the recipe's global batch"
        )
    out_dir = Path(job.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trust = job.options.trust_remote_code
    serving = load_serving(job.base_bundle, trust_remote_code=trust)
    tokenizer = serving.tokenizer
    # TRL appends tokenizer.eos_token to answers that lack it: make that the served end-of-turn token,
    # which mixture_rows already appended, so nothing is appended twice.
    tokenizer.eos_token = serving.end_of_turn
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.convert_ids_to_tokens(
            serving.pad_id if serving.pad_id is not None else serving.end_of_turn_id
        )
    sft_mixture = job.sft_mixture
    data = mixture_rows(
        job.mixture["path"] if job.mixture else None,
        serving,
        sft_mixture["path"] if sft_mixture else None,
    )
    dataset = Dataset.from_dict(data)

    cuda = trains_on_gpu()
    lora = LoraConfig(
        r=hp.lora_rank,
        # float: peft says int but scales by alpha / r, and the adapter config has always recorded a float
        lora_alpha=float(hp.lora_alpha),  # type: ignore[arg-type]
        lora_dropout=hp.lora_dropout,
        target_modules=hp.target_modules,
        bias="none",
        task_type="CAUSAL_LM",
    )
    steps = hp.max_steps
    resume_from = _last_checkpoint(out_dir) if job.options.resume else None
    args = DPOConfig(
        output_dir=str(out_dir),
        seed=job.seed,
        data_seed=job.seed,
        beta=hp.beta,
        loss_type=["sigmoid", "sft"],
        loss_weights=[1.0, hp.sft_weight],
        learning_rate=hp.learning_rate,
        lr_scheduler_type=hp.lr_scheduler,
        warmup_steps=hp.warmup_steps,
        max_steps=steps,
        per_device_train_batch_size=hp.per_device_batch,
        gradient_accumulation_steps=hp.gradient_accumulation_steps,
        max_length=hp.max_length,
        # The recipe's lora_dropout is meant to act; TRL's default would zero every dropout.
        disable_dropout=False,
        logging_steps=1 if steps <= 50 else 10,
        save_strategy="steps",
        save_steps=job.save_steps,
        save_total_limit=None,
        report_to=list(job.options.report_to) or "none",
        bf16=cuda,
        use_cpu=not cuda,
        gradient_checkpointing=cuda,
        dataloader_num_workers=0,
        disable_tqdm=not sys.stderr.isatty(),
    )
    # After the config: under DeepSpeed ZeRO-3 the config installs the hook that partitions weights while
    # they load, instead of every process holding the whole model in CPU memory first.
    model = load_model(
        job.base_bundle, trust_remote_code=trust, dtype=torch.bfloat16 if cuda else torch.float32
    )

    logs: list[dict] = []
    lines = job.log_lines and not sys.stderr.isatty()
    training_log = TrainingLog(job.round, steps, logs, None, sys.stderr if lines else None)

    class KeepLogs(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            training_log.begin(state.global_step)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs:
                training_log.log(state.global_step, logs, main=state.is_world_process_zero)

    # TRL wraps the model in the LoRA adapter before the Trainer seeds: without this the adapter's random
    # init would take whatever state the process's generator was left in by what ran before.
    set_seed(job.seed)
    trainer = DPOTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora,
        callbacks=[KeepLogs()],
    )
    # Without a terminal the Trainer prints every log dict to stdout (PrinterCallback), which is a
    # command's output (`--json`); KeepLogs records them in the evidence instead.
    trainer.remove_callback(PrinterCallback)
    # The main process writes training_log.jsonl (a resumed run appends to it); the others keep history.
    with contextlib.ExitStack() as files:
        if trainer.is_world_process_zero():
            path = out_dir / LOG_FILE
            training_log.jsonl = files.enter_context(
                open(path, "a" if resume_from else "w", encoding="utf-8")
            )
        train_output = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    trainer.save_model(str(out_dir))
    if trainer.is_world_process_zero():
        make_portable(out_dir)  # the tokenizer files saved beside the adapter, for transformers 4.x too

    final = _final_metrics(logs)
    final.update({"global_step": trainer.state.global_step, "train_loss": train_output.training_loss})
    evidence = {
        "kind": "adapter",
        "round": job.round,
        "recipe": job.recipe,
        "recipe_sha256": job.recipe_sha256,
        "mixture": job.mixture,
        "mixture_sha256": job.mixture["sha256"] if job.mixture else None,
        "sft_mixture": sft_mixture,
        "sft_mixture_sha256": sft_mixture["sha256"] if sft_mixture else None,
        "sft_rows": sft_mixture["rows"] if sft_mixture else 0,
        "seed": job.seed,
        "objective": {
            "loss_type": ["sigmoid", "sft"],
            "loss_weights": [1.0, hp.sft_weight],
            "beta": hp.beta,
        },
        "hyperparameters": hp.to_json(),
        "libraries": library_versions(),
        "options": options_json(job.options),
        "base": {
            "path": job.base_bundle,
            "name": job.base_name,
            "tokenizer_fingerprint": tokenizer_identity(job.base_bundle).sha256,
            **job.base_check,
        },
        "served_format": {
            "end_of_turn": serving.end_of_turn,
            "eos_token_id": serving.eos_ids,
            "enable_thinking": serving.enable_thinking,
        },
        "rows": len(data["prompt"]),
        "resumed_from": resume_from.name if resume_from else None,
        "final_metrics": final,
        "log_file": LOG_FILE,
        "log_history": logs,
    }
    if trainer.is_world_process_zero():  # the process that wrote the adapter
        evidence["adapter_sha256"] = {
            p.name: sha256_file(p) for p in sorted(out_dir.glob("adapter_*")) if p.is_file()
        }
        atomic_write_json(out_dir / EVIDENCE_FILE, evidence)
    return evidence


def _final_metrics(logs: list[dict]) -> dict:
    """The last logged value of each training metric (loss, rewards/margins, rewards/accuracies, ...)."""
    final: dict = {}
    for entry in logs:
        for k, v in entry.items():
            if isinstance(v, (int, float)) and k != "step":
                final[k] = v
    return final


# ---------------------------------------------------------------------------- the command


def train_dpo(store: Store, options: DpoOptions, *, overrides: dict[str, Any] | None = None) -> DpoResult:
    """Train the round's LoRA adapter on its export and register it (checkpoint kind 'adapter'), as
    `options` say (`pairstore train dpo`'s options, train.dpo_job.DpoOptions).

    `overrides` replaces [train] values for this run (e.g. the demo's small batch); they are
    recorded in the evidence's hyperparameters."""
    options = check_launch(options)
    job = prepare_job(store, options, overrides=overrides)
    evidence = execute_job(job)
    return register_adapter(store, job, evidence)


def check_launch(options: DpoOptions) -> DpoOptions:
    """The options checked (train.dpo_job.dpo_options) and their launch consistent."""
    options = dpo_options(options)
    if options.launcher is None and options.num_processes != 1:
        raise BadInput("a world size above 1 needs --launcher accelerate", field="num_processes")
    return options


def execute_job(job: TrainingJob) -> dict:
    """Run a prepared job in this process or through `accelerate launch`; returns its evidence. A write that
    fails (a full disk) is one line naming the run folder. A run folder this run made goes again unless it
    holds a checkpoint-N to resume from (`--resume`): nothing it half-wrote stays behind for nothing."""
    made = missing_folders(job.out_dir)
    try:
        return _execute_job(job)
    except OSError as e:
        out = Path(job.out_dir)
        if made and _last_checkpoint(out) is None:
            shutil.rmtree(out, ignore_errors=True)
        remove_empty_folders(made)
        raise write_failure(out, e) from None


def _execute_job(job: TrainingJob) -> dict:
    if job.options.launcher is None:
        return run_job(job)

    out_dir = Path(job.out_dir)
    job_path = atomic_write_json(out_dir / JOB_FILE, job.to_json())
    evidence_path = out_dir / EVIDENCE_FILE
    if evidence_path.exists():
        evidence_path.unlink()  # a stale file must not pass for this run's
    run_accelerate(
        job_path, num_processes=job.hyperparameters.world_size, config=job.options.accelerate_config
    )
    if not evidence_path.is_file():
        raise PairstoreError(f"the accelerate run finished without writing {evidence_path}")
    return json.loads(evidence_path.read_text(encoding="utf-8"))


def register_adapter(store: Store, job: TrainingJob, evidence: dict) -> DpoResult:
    """The adapter registered as checkpoint --name (default ROUND-lora), its parent the base's name."""
    name = job.options.name or f"{job.round}-lora"
    checkpoint_name_for(store, job.base_bundle, job.base_name)  # the base under the name trained from
    register_checkpoint(
        store,
        name,
        "adapter",
        [job.base_name],
        round=job.round,
        path=job.out_dir,
        evidence={k: v for k, v in evidence.items() if k != "log_history"},
    )
    return DpoResult(Path(job.out_dir), name, evidence)


def train_dpo_at(db_path: str | Path, options: DpoOptions) -> DpoResult:
    """train_dpo for the command line: the store is open only to prepare and to register, not during
    the hours of training, so other pairstore commands can write meanwhile."""
    options = check_launch(options)
    with open_store(db_path, read_only=True) as store:
        job = prepare_job(store, options)
    evidence = execute_job(job)
    with open_store(db_path) as store:
        return register_adapter(store, job, evidence)


# ---------------------------------------------------------------------------- measuring a pair's margin


def completion_logprob(model, serving, prompt_messages: list[dict], answer: str) -> float:
    """Sum of log-probabilities of `answer` + end-of-turn given the served prompt (what DPO optimizes)."""
    import torch

    prompt_ids = serving.encode(serving.render(prompt_messages))
    full_ids = serving.encode(serving.render(prompt_messages) + answer + serving.end_of_turn)
    n = 0
    while n < min(len(prompt_ids), len(full_ids)) and prompt_ids[n] == full_ids[n]:
        n += 1
    ids = torch.tensor([full_ids], device=model.device)
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
    logps = torch.log_softmax(logits[0, :-1], dim=-1).gather(1, ids[0, 1:, None])[:, 0]
    return float(logps[n - 1 :].sum())


def pair_margins(model, serving, pairs: list[dict]) -> list[float]:
    """log p(chosen) - log p(rejected) for each {prompt (messages), chosen, rejected} (strings)."""
    return [
        completion_logprob(model, serving, p["prompt"], p["chosen"])
        - completion_logprob(model, serving, p["prompt"], p["rejected"])
        for p in pairs
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Run a prepared pairstore DPO job (what accelerate launches)."
    )
    parser.add_argument("--job", required=True, help="pairstore_job.json written by `pairstore train dpo`")
    parser.add_argument(
        "--db",
        help="register the adapter in this store when training ends (rank 0 only); "
        "the Slurm script uses it, `pairstore train dpo` registers by itself",
    )
    ns = parser.parse_args(argv)
    try:
        job = TrainingJob.from_json(json.loads(Path(ns.job).read_text(encoding="utf-8")))
        evidence = run_job(job)
        if ns.db and int(os.environ.get("RANK", "0")) == 0:
            with open_store(ns.db) as store:
                result = register_adapter(store, job, evidence)
            print(f"registered adapter {result.adapter_name} at {result.out_dir}")
    except PairstoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
