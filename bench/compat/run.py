#!/usr/bin/env python3
"""Do the bundles pairstore writes load in transformers 4.x, the major vLLM pins? Checked, not assumed.

    .venv/bin/python bench/compat/run.py            # transformers<5 and 4.46.3; scratch venvs built once each
    .venv/bin/python bench/compat/run.py --transformers "transformers==4.51.3"

1. A scratch venv per transformers spec (bench/_work/compat-venv-N): the CPU torch wheel first (else pip
   pulls a multi-GB CUDA build), then that transformers and jinja2. Nothing of pairstore is installed there.
2. In this project's venv (transformers 5): the tiny base bundle (train.tiny), a LoRA adapter with random
   weights, its merge (train.merge) and a soup of base and merge at alpha 0.5 (train.soup); as the
   control, the same base saved by transformers 5 alone, without train.portable's fields; and a user's
   chain from that control (a base transformers saved): its merge and the soup of the two at 0.5.
3. bench/compat/load_bundles.py loads each bundle in both venvs (tokenizer, chat template, config, generation
   config, model) and generates a few tokens greedily; the two majors must agree token for token.

Writes bench/results/compat.md (bench/run_all puts it into bench/RESULTS.md). Exit status 1 when a bundle
pairstore wrote fails in 4.x or the majors disagree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from machine import cpu_model, nproc, ram_text  # noqa: E402  (bench/machine.py)

from pairstore.files import atomic_write_text  # noqa: E402

WORK = BENCH / "_work"
TORCH = "torch==2.13.0"
# The newest 4.x, and an older one of the kind serving stacks pinned for a long time.
DEFAULT_SPECS = ["transformers<5", "transformers==4.46.3"]
RESULT = BENCH / "results" / "compat.md"


def scratch_venv(venv: Path, spec: str) -> tuple[Path, float | None]:
    """The scratch venv's python and the seconds it took to build (None: an earlier build was reused; a stamp
    file records the spec it was built for)."""
    python = venv / "bin" / "python"
    stamp = venv / ".spec"
    if python.exists() and stamp.exists() and stamp.read_text() == spec:
        return python, None
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, TORCH], check=True)  # the CPU wheel first
    subprocess.run([*pip, spec, "jinja2"], check=True)
    stamp.write_text(spec)
    return python, time.perf_counter() - t0


def make_bundles(work: Path) -> dict[str, Path]:
    """base, merge, soup (pairstore's writers) and the transformers-5-only control."""
    import torch
    from peft import LoraConfig, get_peft_model

    from train.merge import merge_adapter
    from train.serving import load_model
    from train.soup import soup
    from train.tiny import make_tiny_bundle, tiny_tokenizer

    base = make_tiny_bundle(work / "base", seed=0, max_new_tokens=6)
    torch.manual_seed(1)
    lora = get_peft_model(
        load_model(base, dtype=torch.float32),
        LoraConfig(
            r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False
        ),
    )
    lora.save_pretrained(str(work / "adapter"))
    merged = merge_adapter(base, work / "adapter", work / "merge").out_dir
    souped = work / "soup"
    soup(base, merged, 0.5, souped)
    control = work / "transformers5-only"
    load_model(base, dtype=torch.float32).save_pretrained(str(control))
    tiny_tokenizer().save_pretrained(str(control))
    # A user's chain from a base transformers saved (not pairstore): its merge and their soup at 0.5, the
    # documented step so7a + 0.5 (m11a - so7a). The soup compares the bundles by what they tokenize
    # (train/bundle_identity.py), so the merge's rewritten tokenizer_config.json does not refuse it.
    user_merge = merge_adapter(control, work / "adapter", work / "user-merge").out_dir
    user_soup = work / "user-soup"
    soup(control, user_merge, 0.5, user_soup)
    return {
        "merge": merged,
        "soup": souped,
        "base": base,
        "merge of the transformers-saved base": user_merge,
        "soup of that base and its merge (alpha 0.5)": user_soup,
        "transformers 5 alone (control)": control,
    }


def load_all(python: Path, bundles: dict[str, Path]) -> dict[str, dict]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(python), str(HERE / "load_bundles.py"), *map(str, bundles.values())],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(HERE),
    )
    if done.returncode != 0:
        raise SystemExit(f"load_bundles.py failed under {python}:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {name: row for name, row in zip(bundles, rows)}


def fields(bundle: Path) -> str:
    tok = json.loads((bundle / "tokenizer_config.json").read_text())
    cfg = json.loads((bundle / "config.json").read_text())
    keys = [k for k in ("torch_dtype", "dtype", "rope_theta", "rope_scaling", "rope_parameters") if k in cfg]
    names = f", model_input_names {tok['model_input_names']}" if "model_input_names" in tok else ""
    return f"tokenizer_class {tok.get('tokenizer_class')}{names}; config: {', '.join(keys)}"


def table(
    spec: str, built: float | None, old: dict, new: dict, bundles: dict[str, Path]
) -> tuple[list[str], bool]:
    v4 = next(iter(old.values()))["transformers"]
    v5 = next(iter(new.values()))["transformers"]
    venv = "reused from an earlier run" if built is None else f"built in {built:.0f} s"
    lines = [
        f"### transformers {v4} (`{spec}`) vs {v5}",
        "",
        f"Scratch venv: `{spec}` resolved to transformers {v4}, with torch 2.13.0 (CPU) and jinja2; {venv}.",
        "",
        f"| bundle | written fields | transformers {v4} | tokens ({v4}) | tokens ({v5}) | same |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    ok = True
    for name, bundle in bundles.items():
        a, b = old[name], new[name]
        if "error" in a:
            status = f"fails: {a['error']}"
        else:
            status = (
                f"loads: {a['tokenizer']}, chat template {'renders' if a['chat_template'] else 'WRONG'}, "
                f"{a['model']}, rope_theta {a['rope_theta']}, eos {a['eos_token_id']}"
            )
        same = "error" not in a and a.get("generated") == b.get("generated")
        if not name.endswith("(control)") and not same:
            ok = False
        lines.append(
            f"| {name} | {fields(bundle)} | {status} | {a.get('generated', '-')} | "
            f"{b.get('generated', b.get('error'))} | {'yes' if same else 'no'} |"
        )
    return lines, ok


def report(argv: list[str], tables: list[list[str]], ok: bool, seconds: float) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "## Bundles in transformers 4.x (bench/compat)",
        "",
        f"Command: `{' '.join(['.venv/bin/python', 'bench/compat/run.py', *argv])}`",
        f"Machine: nproc {nproc()}; {cpu_model()}; RAM {ram_text()}; load average {load}; Python "
        f"{platform.python_version()}; {seconds:.0f} s in all.",
        "",
        "Each bundle is loaded as a serving stack loads it (AutoTokenizer, its chat template with "
        "add_generation_prompt, AutoConfig, GenerationConfig, AutoModelForCausalLM from safetensors) and "
        "generates 6 tokens greedily from the same chat prompt under both majors. merge: the tiny base "
        "(train.tiny) merged with a random-weight LoRA adapter (train.merge); soup: base + 0.5 x (merge - base) "
        "(train.soup).",
        "",
    ]
    for t in tables:
        lines += t + [""]
    lines += [
        "Result: every bundle pairstore wrote loads and generates the same tokens in both majors."
        if ok
        else "Result: FAILED: a bundle pairstore wrote does not load in 4.x, or the majors disagree.",
        "The control is what transformers 5 writes by itself: 4.x cannot load its tokenizer, the failure "
        "the portable fields (train/portable.py) remove.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--transformers",
        action="append",
        metavar="SPEC",
        help=f"pip spec of a 4.x to check against, repeatable (default: {' and '.join(DEFAULT_SPECS)})",
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    work = WORK / "compat-bundles"
    if work.exists():
        shutil.rmtree(work)
    bundles = make_bundles(work)
    new = load_all(Path(sys.executable), bundles)
    tables, ok = [], True
    for i, spec in enumerate(args.transformers or DEFAULT_SPECS):
        python, built = scratch_venv(WORK / f"compat-venv-{i}", spec)
        lines, passed = table(spec, built, load_all(python, bundles), new, bundles)
        tables.append(lines)
        ok = ok and passed
    shown = sys.argv[1:] if argv is None else argv
    text = report(shown, tables, ok, time.perf_counter() - t0)
    atomic_write_text(RESULT, text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
