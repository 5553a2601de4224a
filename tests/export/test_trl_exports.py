"""TRL trains on pairstore's export files as they are: DPOTrainer on NAME.parquet,
SFTTrainer on NAME.sft.parquet.

    HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/export/test_trl_exports.py -q

One optimizer step each on the tiny model (CPU): the point is that the file contract of docs/design.md is
TRL's own dataset format, with no conversion in between.
"""

from __future__ import annotations

import pytest
import torch

from pairstore.export.run import export_round

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def exported(round_r1, tmp_path):
    export_round(round_r1, "r1", tmp_path / "out")
    return tmp_path / "out"


def _model_and_tokenizer(bundle):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(bundle))
    tokenizer.chat_template = (bundle / "chat_template.jinja").read_text(encoding="utf-8")
    model = AutoModelForCausalLM.from_pretrained(str(bundle), dtype=torch.float32)
    return model, tokenizer


def _one_step(out_dir) -> dict:
    return {
        "output_dir": str(out_dir),
        "max_steps": 1,
        "per_device_train_batch_size": 2,
        "learning_rate": 1e-4,
        "report_to": [],
        "save_strategy": "no",
        "logging_steps": 1,
        "use_cpu": True,
        "seed": 0,
        "dataloader_num_workers": 0,
    }


def test_dpo_trainer_takes_the_export_parquet(exported, tiny, tmp_path):
    from datasets import load_dataset
    from trl import DPOConfig, DPOTrainer

    data = load_dataset("parquet", data_files=str(exported / "r1.parquet"), split="train")
    assert {"prompt", "chosen", "rejected"} <= set(data.column_names) and len(data) == 39
    model, tokenizer = _model_and_tokenizer(tiny)
    trainer = DPOTrainer(
        model=model,
        args=DPOConfig(**_one_step(tmp_path / "dpo"), max_length=256),
        train_dataset=data,
        processing_class=tokenizer,
    )
    result = trainer.train()
    assert trainer.state.global_step == 1 and result.training_loss > 0


def test_sft_trainer_takes_the_sft_parquet(exported, tiny, tmp_path):
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    data = load_dataset("parquet", data_files=str(exported / "r1.sft.parquet"), split="train")
    assert {"prompt", "completion"} <= set(data.column_names) and len(data) == 1
    model, tokenizer = _model_and_tokenizer(tiny)
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(**_one_step(tmp_path / "sft"), max_length=256),
        train_dataset=data,
        processing_class=tokenizer,
    )
    result = trainer.train()
    assert trainer.state.global_step == 1 and result.training_loss > 0
