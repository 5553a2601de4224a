"""Scale-out: run a prepared DPO job through `accelerate launch`, or write a Slurm script that does.

The shipped accelerate configs live in train/configs: `zero3` (DeepSpeed ZeRO-3, the model card's 4-GPU
set-up), `fsdp` (PyTorch FSDP2) and `cpu` (one CPU process: the same launch path, for tests). The Slurm
script is for the documented set-up: one node, 4 GPUs, batch 1 per GPU, gradient accumulation 8 (the
recipe's global batch 32); it resumes from the last checkpoint when the job is requeued.

    pairstore train dpo --round m11a --base runs/so7a --out runs/m11a-lora \\
        --launcher accelerate --num-processes 4
    pairstore train dpo --round m11a --base runs/so7a --out runs/m11a-lora --emit-sbatch m11a.sbatch
    sbatch m11a.sbatch
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import subprocess
import sys
from pathlib import Path

from pairstore.errors import BadInput, GateRefused, PairstoreError
from pairstore.files import atomic_write_json, atomic_write_text
from pairstore.store.store import Store
from train.dpo_job import JOB_FILE, DpoOptions, prepare_job

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
CONFIGS = ("zero3", "fsdp", "cpu")


def config_path(config: str | None, *, num_processes: int) -> Path:
    """A shipped config by name, or a path to one's own. Default: zero3 with GPUs, cpu for one process
    without."""
    if config is None:
        import torch

        config = "zero3" if torch.cuda.is_available() else "cpu"
    if config in CONFIGS:
        path = CONFIG_DIR / f"{config}.yaml"
    else:
        path = Path(config)
        if not path.is_file():
            raise BadInput(
                f"no accelerate config {config!r} (shipped: {', '.join(CONFIGS)}; or a YAML path)",
                field="accelerate_config",
            )
    if path.name == "cpu.yaml" and num_processes != 1:
        raise BadInput(
            "the cpu config runs one process; use zero3 or fsdp for more", field="accelerate_config"
        )
    return path


def accelerate_command(job_path, *, num_processes: int, config: str | None = None, db=None) -> list[str]:
    """The `accelerate launch` command line that runs a prepared job in `num_processes` processes."""
    cfg = config_path(config, num_processes=num_processes)
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(cfg),
        "--num_processes",
        str(num_processes),
    ]
    if cfg.name == "cpu.yaml":
        cmd.append("--cpu")
    cmd += ["-m", "train.dpo", "--job", str(Path(job_path).resolve())]
    if db is not None:
        cmd += ["--db", str(Path(db).resolve())]
    return cmd


def _child_env() -> dict:
    """The launching environment, with this checkout importable in every child process."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def run_accelerate(job_path, *, num_processes: int, config: str | None = None) -> None:
    """Run the job through `accelerate launch`; a child's gate refusal stays exit 3,
    any failure is an error."""
    cmd = accelerate_command(job_path, num_processes=num_processes, config=config)
    rc = subprocess.run(cmd, env=_child_env(), check=False).returncode
    if rc == GateRefused.exit_code:
        raise GateRefused("the training process refused the mixture (see its message above)")
    if rc != 0:
        raise PairstoreError(f"accelerate launch exited with status {rc}: {shlex.join(cmd)}")


def sbatch_script(
    job_path,
    *,
    db,
    gpus: int,
    hyperparameters: dict,
    round_name: str,
    out_dir,
    config: str = "zero3",
    time_limit: str = "04:00:00",
    cpus_per_task: int = 32,
    partition: str | None = None,
) -> str:
    """The text of a one-node Slurm script that trains the prepared job on `gpus` GPUs and registers it
    (under the job's --name)."""
    launch = accelerate_command(job_path, num_processes=gpus, config=config, db=db)
    out_dir = Path(out_dir).resolve()
    hp = hyperparameters
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name=dpo-{round_name}",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gres=gpu:{gpus}",
        f"#SBATCH --cpus-per-task={cpus_per_task}",
        f"#SBATCH --time={time_limit}",
        f"#SBATCH --output={out_dir}/slurm-%j.out",
        "#SBATCH --requeue",
    ]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += [
        "",
        f"# pairstore DPO round {round_name}: {gpus} GPUs x batch {hp['per_device_batch']} per GPU "
        f"x gradient accumulation {hp['gradient_accumulation_steps']} = global batch {hp['global_batch']}, "
        f"{hp['max_steps']} steps.",
        "# The job file was prepared from the store when this script was written; every training process",
        "# re-checks the mixture's SHA-256 and a requeued job resumes from its last checkpoint.",
        "set -euo pipefail",
        f"cd {shlex.quote(str(Path(__file__).resolve().parent.parent))}",
        "export HF_HUB_OFFLINE=1",
        shlex.join(launch),
        "",
    ]
    return "\n".join(lines)


def emit_sbatch(store: Store, options: DpoOptions, *, db: str | Path) -> Path:
    """Prepare the round's job for `options.gpus` GPUs (resume on requeue) and write the Slurm script to
    `options.emit_sbatch`."""
    config = options.accelerate_config or "zero3"
    if config == "cpu":
        raise BadInput("a Slurm GPU job needs the zero3 or fsdp config", field="accelerate_config")
    script = options.emit_sbatch
    if script is None:
        raise BadInput("no path for the Slurm script (--emit-sbatch)", field="emit_sbatch")
    options = dataclasses.replace(options, resume=True, launcher="accelerate", accelerate_config=config)
    job = prepare_job(store, options)
    out = Path(job.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    job_path = atomic_write_json(out / JOB_FILE, job.to_json())
    text = sbatch_script(
        job_path,
        db=db,
        gpus=options.gpus,
        hyperparameters=job.hyperparameters.to_json(),
        round_name=options.round,
        out_dir=out,
        config=config,
        time_limit=options.time,
        partition=options.partition,
    )
    target = atomic_write_text(script, text)
    os.chmod(target, 0o755)
    return target
