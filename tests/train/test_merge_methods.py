"""Merge methods as one declaration each (train/merges): the registry, the shared spec and evidence, and
TIES against its definition (trim by magnitude, elect sign, disjoint mean), bit for bit in bf16.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_merge_methods.py -q
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pairstore.errors import BadInput, PairstoreError
from pairstore.keys import sha256_file
from pairstore.options import option
from pairstore.store.store import open_store
from tests.train.test_soup import bits, load_bundle, make_tensors, write_bundle
from train import bundle as B
from train.merges.registry import SPEC_FILE, get_method, merge, methods, read_spec, register
from train.merges.ties import TiesOptions, ties_merge, trim

F32 = np.float32
# Every dtype a bundle holds, small enough for the definition by hand; the base in three shards.
LAYOUT = {
    "model.embed_tokens.weight": ((16, 12), torch.bfloat16),
    "model.layers.0.self_attn.q_proj.weight": ((12, 12), torch.bfloat16),
    "model.layers.0.input_layernorm.weight": ((12,), torch.float32),
    "model.layers.0.mlp.up_proj.weight": ((5, 12), torch.float16),
    "model.layers.0.mlp.down_proj.weight": ((12, 5), torch.bfloat16),
    "model.layers.1.scale": ((7,), torch.float64),
    "model.position_ids": ((9,), torch.int64),
    "model.norm.weight": ((12,), torch.float32),
    "lm_head.weight": ((16, 12), torch.bfloat16),
}
SHARDS = [list(LAYOUT)[:3], list(LAYOUT)[3:6], list(LAYOUT)[6:]]


# ---------------------------------------------------------------------------- the definition, by hand


def ties_by_hand(base, models, weights, density, scale):
    """TIES element by element in float32 scalars, as the definition reads (an implementation independent
    of train.merges.ties: Python sorting for the trim, one element at a time for the rest)."""
    n = base.size
    k = max(1, int(density * n))
    trimmed = []
    for m in models:
        delta = [F32(m[j]) - F32(base[j]) for j in range(n)]
        kept = set(sorted(range(n), key=lambda j: (-abs(float(delta[j])), j))[:k])
        trimmed.append([delta[j] if j in kept else F32(0) for j in range(n)])
    out = np.empty(n, F32)
    for j in range(n):
        weighted = [F32(w) * t[j] for w, t in zip(weights, trimmed)]
        total = weighted[0]
        for x in weighted[1:]:
            total = total + x
        sign = 1 if total >= 0 else -1
        num, den = F32(0), F32(0)
        for x, w in zip(weighted, weights):
            if (x > 0 and sign == 1) or (x < 0 and sign == -1):
                num, den = num + x, den + F32(w)
        out[j] = F32(base[j]) + F32(scale) * (num / (den if den != 0 else F32(1)))
    return out


def _arrays(seed: int, n_models: int, size: int):
    """Small float32 tensors whose task vectors share magnitudes (ties at the cut) and signs disagree."""
    rng = np.random.default_rng(seed)
    base = (rng.integers(-8, 8, size) / 4).astype(F32)
    models = [base + (rng.integers(-3, 4, size) / 8).astype(F32) for _ in range(n_models)]
    return base, models


@given(
    seed=st.integers(0, 2**32 - 1),
    n_models=st.integers(1, 4),
    size=st.integers(1, 40),
    density=st.sampled_from([0.05, 0.2, 0.3, 0.5, 0.7, 1.0]),
    weights=st.lists(st.sampled_from([0.25, 0.5, 1.0, 1.5, 3.0]), min_size=4, max_size=4),
    scale=st.sampled_from([1.0, 0.5, 2.0]),
)
def test_ties_merge_is_its_definition_bit_for_bit(seed, n_models, size, density, weights, scale):
    base, models = _arrays(seed, n_models, size)
    ours = ties_merge(base, models, weights[:n_models], density, scale)
    want = ties_by_hand(base, models, weights[:n_models], density, scale)
    assert ours.dtype == F32 and ours.tobytes() == want.tobytes()


def test_trim_keeps_the_largest_magnitudes_and_breaks_ties_by_position():
    delta = np.array([0.5, -2.0, 1.0, -1.0, 1.0, 0.0], F32)
    assert trim(delta, 0.5).tolist() == [0.0, -2.0, 1.0, -1.0, 0.0, 0.0]  # k = 3: -2, then 1 and -1
    assert trim(delta, 0.01).tolist() == [0.0, -2.0, 0.0, 0.0, 0.0, 0.0]  # at least one is kept
    assert trim(delta, 1.0) is delta


def test_ties_elects_the_sign_of_the_weighted_sum_and_averages_only_agreeing_models():
    base = np.zeros(3, F32)
    models = [
        np.array([1.0, -1.0, 4.0], F32),
        np.array([3.0, 2.0, -1.0], F32),
        np.array([-1.0, 2.0, 0.0], F32),
    ]
    merged = ties_merge(base, models, [1.0, 1.0, 1.0], 1.0, 1.0)
    # element 0: sum 3 > 0, positive models 1 and 3 -> (1 + 3) / 2; element 1: sum 3, (2 + 2) / 2;
    # element 2: sum 3, only model 1 agrees -> 4 (model 3's zero has no sign).
    assert merged.tolist() == [2.0, 2.0, 4.0]
    assert ties_merge(base, models, [1.0, 1.0, 1.0], 1.0, 0.5).tolist() == [1.0, 1.0, 2.0]


# ---------------------------------------------------------------------------- the method end to end


def _family(tmp_path, n_models=2):
    """A base and fine-tuned models in bf16 (plus f32, f16, f64 and int64 tensors), in other layouts."""
    base_t = make_tensors(1, LAYOUT)
    base = write_bundle(tmp_path / "base", base_t, SHARDS)
    models, tensors = [], []
    for i in range(n_models):
        t = {k: v.clone() for k, v in base_t.items()}
        g = torch.Generator().manual_seed(10 + i)
        for name, v in t.items():
            if v.is_floating_point():
                t[name] = (v.float() + torch.randn(v.shape, generator=g) * 0.01).to(v.dtype)
        models.append(write_bundle(tmp_path / f"m{i + 1}", t))
        tensors.append(t)
    return base, base_t, models, tensors


def _by_hand(base_t, model_ts, name, weights, density, scale=1.0):
    """The definition for one tensor: float32 by hand (float64 for F64), rounded by torch."""
    b = base_t[name]
    if not b.is_floating_point():
        return b
    wide = np.float64 if b.dtype == torch.float64 else F32
    as_np = [
        t[name].to(torch.float64 if wide is np.float64 else torch.float32).flatten().numpy() for t in model_ts
    ]
    base_np = b.to(torch.float64 if wide is np.float64 else torch.float32).flatten().numpy()
    if wide is np.float64:
        merged = ties_merge(base_np, as_np, weights, density, scale)  # the same code in float64
    else:
        merged = ties_by_hand(base_np, as_np, weights, density, scale)
    return torch.from_numpy(np.asarray(merged)).reshape(b.shape).to(b.dtype)


def test_ties_bundle_is_the_definition_in_every_dtype_and_keeps_the_base_layout(tmp_path):
    base, base_t, models, model_ts = _family(tmp_path)
    options = TiesOptions(base=str(base), model=tuple(map(str, models)), density=0.3, weight=(1.0, 2.0))
    result = merge("ties", options, tmp_path / "t")
    out = tmp_path / "t"
    got = load_bundle(out)
    assert set(got) == set(LAYOUT)
    for name, t in got.items():
        want = _by_hand(base_t, model_ts, name, [1.0, 2.0], 0.3)
        assert t.dtype == want.dtype and bytes(bits(t)) == bytes(bits(want)), name
    assert any(not torch.equal(got[n], base_t[n]) for n in got)
    assert [p.name for p in B.list_shards(out)] == [p.name for p in B.list_shards(base)]
    for pa, po in zip(B.list_shards(base), B.list_shards(out)):
        assert B.read_shard_header(pa).raw == B.read_shard_header(po).raw
    ev = json.loads((out / B.EVIDENCE_FILE).read_text())
    assert ev == result.evidence and ev["method"] == "ties" and ev["kind"] == "soup"
    assert ev["options"] == {
        "base": str(base),
        "model": [str(m) for m in models],
        "density": 0.3,
        "weight": [1.0, 2.0],
        "scale": 1.0,
        "base_name": None,
        "model_name": [],
    }
    assert ev["inputs"]["model 2"]["sha256"] == {p.name: sha256_file(p) for p in B.list_shards(models[1])}
    assert ev["output"]["shards_sha256"] is None  # not registered, not asked
    assert (out / "chat_template.jinja").read_bytes() == (base / "chat_template.jinja").read_bytes()


def test_the_spec_beside_the_output_runs_the_same_merge_again(tmp_path):
    base, _, models, _ = _family(tmp_path)
    merge("ties", {"base": str(base), "model": [str(m) for m in models], "density": 0.5}, tmp_path / "t")
    saved = json.loads((tmp_path / "t" / SPEC_FILE).read_text())
    assert saved["method"] == "ties" and saved["version"] == "1" and saved["options"]["density"] == 0.5
    spec, options = read_spec(tmp_path / "t")
    merge(spec, options, tmp_path / "again")
    for a, b in zip(B.list_shards(tmp_path / "t"), B.list_shards(tmp_path / "again")):
        assert a.read_bytes() == b.read_bytes()


def test_a_spec_is_checked_with_plain_messages(tmp_path):
    base, _, models, _ = _family(tmp_path, n_models=1)
    good = {"base": str(base), "model": [str(models[0])], "density": 0.5}
    cases = [
        ({**good, "densty": 0.5}, "merge method ties has no option 'densty'"),
        ({k: v for k, v in good.items() if k != "density"}, "merge method ties: option density is required"),
        ({**good, "density": "half"}, "option density is a number, not 'half'"),
        ({**good, "model": str(models[0])}, "option model is a list"),
        ({**good, "density": 1.5}, "density must be above 0 and at most 1"),
        ({**good, "weight": [1.0, 2.0]}, "2 weights for 1 models"),
        ({**good, "weight": [-1.0]}, "every weight must be above 0"),
        ({**good, "model": []}, "give at least one --model"),
    ]
    for spec, message in cases:
        with pytest.raises(BadInput, match=message):
            merge("ties", spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    (tmp_path / "bad.json").write_text(json.dumps({"method": "ties", "version": "0", "options": good}))
    with pytest.raises(BadInput, match="version '0' of merge method ties"):
        read_spec(tmp_path / "bad.json")


def test_ties_refuses_a_model_of_another_shape_or_a_non_finite_value(tmp_path):
    base, base_t, models, _ = _family(tmp_path)
    odd = dict(base_t)
    odd["lm_head.weight"] = torch.zeros((17, 12), dtype=torch.bfloat16)
    bad = write_bundle(tmp_path / "odd", odd)
    with pytest.raises(
        BadInput, match=r"lm_head.weight.*shape mismatch: the base has \[16, 12\], model 2 has"
    ):
        merge(
            "ties", {"base": str(base), "model": [str(models[0]), str(bad)], "density": 0.5}, tmp_path / "o"
        )
    nan = dict(base_t)
    nan["model.norm.weight"] = base_t["model.norm.weight"].clone()
    nan["model.norm.weight"][3] = float("inf")
    bad = write_bundle(tmp_path / "inf", nan)
    with pytest.raises(BadInput, match="model.norm.weight.*model 1 holds a value that is not finite"):
        merge("ties", {"base": str(base), "model": [str(bad)], "density": 0.5}, tmp_path / "o")
    assert not (tmp_path / "o").exists() and not list(tmp_path.glob(".o.*"))


@pytest.mark.slow
def test_cli_ties_registers_a_soup_of_every_input_and_lineage_describes_it(tmp_path, run_cli, db_path):
    base, _, models, _ = _family(tmp_path)
    args = ["train", "ties", "--base", base, "--model", models[0], "--model", models[1], "--density", "0.4"]
    r = run_cli(*args, "--out", tmp_path / "t1", "--model-name", "ma", "--model-name", "mb")
    assert r.exit_code == 0, r.output
    assert "registered checkpoint t1 (soup of base, ma and mb)" in r.output
    with open_store(db_path, read_only=True) as store:
        row = store.rows("SELECT kind, parents, evidence FROM checkpoints WHERE name = 't1'")[0]
    assert row["kind"] == "soup" and list(row["parents"]) == ["base", "ma", "mb"]
    evidence = json.loads(row["evidence"])
    assert evidence["output"]["shards_sha256"] == {
        p.name: sha256_file(p) for p in B.list_shards(tmp_path / "t1")
    }
    r = run_cli("lineage", "t1")
    assert r.exit_code == 0 and "ties of base, ma, mb" in r.output, r.output
    r = run_cli(*args, "--weight", "1", "--out", tmp_path / "t2")
    assert r.exit_code == 2 and "1 weights for 2 models" in r.output, r.output


# ---------------------------------------------------------------------------- the registry


def test_every_method_has_a_command_with_every_option(run_cli):
    assert {"linear", "lora", "ties"} <= set(methods())
    for spec in methods().values():
        r = run_cli("train", spec.command, "--help")
        assert r.exit_code == 0, r.output
        for o in dataclasses.fields(spec.options):
            shown = o.name.upper() if o.metadata.get("argument") else f"--{o.name.replace('_', '-')}"
            assert shown in r.output, (spec.name, o.name)
        for common in ("--out", "--name", "--no-register", "--hash-output", "--json"):
            assert common in r.output, (spec.name, common)
    assert get_method("soup") is methods()["linear"]  # by command as well as by name


def test_a_declaration_is_checked_when_registered():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Fine:
        x: int = option(1, help="x")

    with pytest.raises(PairstoreError, match="kind is one of"):
        register("bad_test", version="1", kind="adapterish", options=Fine, example="")

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NoHelp:
        x: int = 1

    with pytest.raises(PairstoreError, match="NoHelp.x: declare it with"):
        register("bad_test", version="1", kind="soup", options=NoHelp, example="")
    with pytest.raises(PairstoreError, match="command 'soup' is another method's"):
        register("bad_test", version="1", kind="soup", options=Fine, example="", command="soup")(
            lambda options: None
        )
    with pytest.raises(PairstoreError, match=r"example names \{model\}"):
        register("bad_test", version="1", kind="soup", options=Fine, example="--base {model}")
    assert "bad_test" not in methods()
