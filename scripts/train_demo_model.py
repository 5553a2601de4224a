"""Train the demo's tiny chat model from a seed and write it as a bundle (see train/tiny_chat.py).

    .venv/bin/python scripts/train_demo_model.py --out runs/tiny-chat              # the shipped incumbent
    .venv/bin/python scripts/train_demo_model.py --out /tmp/t --steps 20 --eval-every 10   # a quick check

Every setting is a TrainConfig field; the defaults are the shipped incumbent's, and the config is saved in
the bundle (tiny_chat_config.json) with the training history (training_evidence.json). Same seed, same
thread count, same weights on CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from train.tiny_chat import TrainConfig, train  # noqa: E402


def main(argv=None) -> int:
    defaults = TrainConfig()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="bundle folder to write")
    p.add_argument("--config", help="a JSON file of TrainConfig fields (flags below override it)")
    for name in (
        "seed",
        "steps",
        "batch",
        "eval_every",
        "n_layer",
        "n_embd",
        "n_head",
        "intermediate",
        "threads",
        "probe_per_family",
        "max_new_tokens",
    ):
        p.add_argument(
            "--" + name.replace("_", "-"), type=int, default=None, help=f"default {getattr(defaults, name)}"
        )
    for name in ("lr", "stop_at_accuracy"):
        p.add_argument(
            "--" + name.replace("_", "-"), type=float, default=None, help=f"default {getattr(defaults, name)}"
        )
    p.add_argument(
        "--save-every-eval",
        action="store_true",
        default=None,
        help="also write the bundle at every evaluation to OUT/step-N",
    )
    p.add_argument("--mix", help='JSON list of [family, difficulty, weight], e.g. [["letter_removal",1,1]]')
    ns = p.parse_args(argv)
    fields = json.loads(Path(ns.config).read_text()) if ns.config else {}
    for k, v in vars(ns).items():
        if k not in ("out", "config", "mix") and v is not None:
            fields[k] = v
    if ns.mix:
        fields["mix"] = json.loads(ns.mix)
    cfg = TrainConfig(**fields)
    evidence = train(cfg, ns.out, log=lambda line: print(line, flush=True))
    last = evidence["history"][-1] if evidence["history"] else {}
    print(
        f"wrote {ns.out}: {evidence['steps_trained']} steps in {evidence['seconds']} s, "
        f"probe accuracy {last.get('probe_accuracy')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
