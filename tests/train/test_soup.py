"""Streaming soup and bundle I/O: exactness against the float32 reference, refusals, evidence, CLI.

HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/train/test_soup.py -q
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from safetensors.torch import load_file, save_file

from pairstore.cli import cli
from pairstore.errors import BadInput, PairstoreError
from pairstore.keys import sha256_file
from tests.tiers import fast_share
from train import bundle as B
from train.bundle import EVIDENCE_FILE
from train.bundle_identity import family_differences, tokenizer_identity
from train.soup import soup
from train.soup_kernel import SoupKernel, native_available, soup_reference

SLICE = 4096  # small slices: the embedding below spans several, several small tensors share one

# name -> (shape, torch dtype); embed (64*96 bf16 = 12 KiB) is larger than a slice.
LAYOUT = {
    "model.embed_tokens.weight": ((64, 96), torch.bfloat16),
    "model.layers.0.self_attn.q_proj.weight": ((96, 96), torch.bfloat16),
    "model.layers.0.input_layernorm.weight": ((96,), torch.float32),
    "model.layers.0.mlp.up_proj.weight": ((40, 96), torch.float16),
    "model.layers.0.mlp.down_proj.weight": ((96, 40), torch.bfloat16),
    "model.layers.1.self_attn.q_proj.weight": ((96, 96), torch.bfloat16),
    "model.layers.1.scale": ((7,), torch.float64),
    "model.position_ids": ((33,), torch.int64),
    "model.norm.weight": ((96,), torch.float32),
    "lm_head.weight": ((64, 96), torch.bfloat16),
}
SHARDS_A = [list(LAYOUT)[:4], list(LAYOUT)[4:7], list(LAYOUT)[7:]]


def make_tensors(seed: int, layout=LAYOUT) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, (shape, dtype) in layout.items():
        if dtype == torch.int64:
            out[name] = torch.arange(shape[0], dtype=torch.int64)
        else:
            out[name] = (torch.randn(shape, generator=g, dtype=torch.float32) * 0.05).to(dtype)
    return out


def write_bundle(
    path: Path,
    tensors: dict[str, torch.Tensor],
    shards: list[list[str]] | None = None,
    template: str = "{{ messages }}",
) -> Path:
    """A bundle written by the safetensors library (independent of our writer), with serving files."""
    path.mkdir(parents=True, exist_ok=True)
    shards = shards or [list(tensors)]
    if len(shards) == 1:
        save_file({k: tensors[k] for k in shards[0]}, str(path / B.SINGLE_NAME), metadata={"format": "pt"})
    else:
        weight_map, total = {}, 0
        for i, names in enumerate(shards, start=1):
            fname = B.shard_file_name(i, len(shards))
            save_file({k: tensors[k] for k in names}, str(path / fname), metadata={"format": "pt"})
            weight_map.update({k: fname for k in names})
            total += sum(tensors[k].numel() * tensors[k].element_size() for k in names)
        B.write_index(path, weight_map, total)
    (path / "tokenizer.json").write_text(
        '{"version": "1.0", "model": {"type": "WordLevel", "vocab": {"<eos>": 0, "a": 1}, '
        '"unk_token": "<eos>"}, '
        '"added_tokens": [{"id": 0, "content": "<eos>", "single_word": false, "lstrip": false, '
        '"rstrip": false, "normalized": false, "special": true}]}'
    )
    (path / "tokenizer_config.json").write_text('{"eos_token": "<eos>"}')
    (path / "chat_template.jinja").write_text(template)
    (path / "system_prompt.txt").write_text("You are helpful.")
    (path / "generation_config.json").write_text('{"max_new_tokens": 2048, "eos_token_id": [11, 2]}')
    (path / "serving_config.json").write_text('{"max_input_tokens": 8192}')
    (path / "config.json").write_text('{"model_type": "llama"}')
    return path


def fp32_reference(a: torch.Tensor, b: torch.Tensor, alpha: float) -> torch.Tensor:
    """The definition via torch (an implementation independent of ours): float32 math, one rounding."""
    if a.dtype == torch.float64:
        return (1.0 - alpha) * a + alpha * b
    wa = torch.tensor(1.0 - alpha, dtype=torch.float32)
    wb = torch.tensor(alpha, dtype=torch.float32)
    return (wa * a.float() + wb * b.float()).to(a.dtype)


def bits(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.uint8).numpy()


def load_bundle(path: Path) -> dict[str, torch.Tensor]:
    out = {}
    for shard in B.list_shards(path):
        out.update(load_file(str(shard)))
    return out


@pytest.fixture
def pair(tmp_path):
    ta, tb = make_tensors(1), make_tensors(2)
    a = write_bundle(tmp_path / "a", ta, SHARDS_A)
    # B laid out differently (one file, reversed order): reads are gathered and its hash is recomputed.
    b = write_bundle(tmp_path / "b", tb, [list(reversed(list(LAYOUT)))])
    return a, b, ta, tb


# ---------------------------------------------------------------------------- kernels


KERNELS = [
    pytest.param(False, id="numpy"),
    pytest.param(
        True, id="native", marks=pytest.mark.skipif(not native_available(), reason="C kernel not built")
    ),
]


def test_native_kernel_is_built_where_a_compiler_is():
    # The C kernel is optional at install; where a compiler exists, losing it silently would triple the
    # soup's CPU time, so the suite says so.
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine")
    assert native_available(), "train/_soup_kernel.c was not built: pip install -e . again"


@pytest.mark.parametrize("native", KERNELS)
@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
@pytest.mark.parametrize("alpha", fast_share([0.5, 0.3, 0.77, 1.5, -0.25], keep=1))
def test_kernel_matches_fp32_reference_bit_exact(dtype, alpha, native):
    rng = np.random.default_rng(7)
    n = 200_003  # several compute blocks and a ragged tail
    np_dtype = {"BF16": np.float32, "F16": np.float16, "F32": np.float32, "F64": np.float64}[dtype]
    a = rng.standard_normal(n).astype(np_dtype)
    b = rng.standard_normal(n).astype(np_dtype)
    # Edge values: exact ties, subnormals, huge values, zeros of both signs, infinities, equal pairs.
    special = np.array([0.0, -0.0, 1e-40, -3e-39, 3e38, -3e38, 65504, 1.0, np.inf, -np.inf], np.float64)
    with np.errstate(over="ignore"):  # 3e38 becomes inf in float16: wanted
        a[: special.size] = special.astype(np_dtype)
        b[: special.size] = special[::-1].astype(np_dtype)
    b[100:200] = a[100:200]
    if dtype == "BF16":
        ta = torch.from_numpy(a).to(torch.bfloat16)
        tb = torch.from_numpy(b).to(torch.bfloat16)
    else:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    a_bytes, b_bytes = bits(ta).tobytes(), bits(tb).tobytes()
    expected = bits(fp32_reference(ta, tb, alpha)).tobytes()
    work = bytearray(a_bytes)
    SoupKernel(alpha, native=native).apply(dtype, memoryview(work), memoryview(b_bytes))
    ours = torch.frombuffer(work, dtype=ta.dtype)
    ref = torch.frombuffer(bytearray(expected), dtype=ta.dtype)
    nan = torch.isnan(ref)
    assert torch.equal(torch.isnan(ours), nan)
    assert bytes(bits(ours[~nan])) == bytes(bits(ref[~nan]))
    from_doc = torch.frombuffer(bytearray(soup_reference(dtype, a_bytes, b_bytes, alpha)), dtype=ta.dtype)
    assert bytes(bits(from_doc[~nan])) == bytes(bits(ref[~nan]))


@pytest.mark.parametrize("native", KERNELS)
def test_bf16_rounding_ties_to_even(native):
    # 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1.0).
    a = torch.tensor([1.0, 1.0 + 2**-7], dtype=torch.bfloat16)
    b = torch.tensor([1.0 + 2**-7, 1.0 + 2**-6], dtype=torch.bfloat16)
    work = bytearray(bits(a).tobytes())
    SoupKernel(0.5, native=native).apply("BF16", memoryview(work), memoryview(bits(b).tobytes()))
    assert torch.frombuffer(work, dtype=torch.bfloat16).tolist() == [1.0, 1.0 + 2**-6]


@pytest.mark.parametrize("alpha", [0.5, 0.3, 0.9])
def test_native_bf16_kernel_equals_numpy_kernel_on_every_bit_pattern(alpha):
    # All 65,536 bf16 patterns (NaNs, infinities, subnormals, both zeros) against two shuffles of them.
    if not native_available():
        pytest.skip("C kernel not built")
    a = np.arange(1 << 16, dtype=np.uint16)
    rng = np.random.default_rng(3)
    for b in (rng.permutation(a), a[::-1].copy()):
        by_numpy, by_c = bytearray(a.tobytes()), bytearray(a.tobytes())
        SoupKernel(alpha, native=False).apply("BF16", memoryview(by_numpy), memoryview(b.tobytes()))
        SoupKernel(alpha, native=True).apply("BF16", memoryview(by_c), memoryview(b.tobytes()))
        assert by_c == by_numpy


# ---------------------------------------------------------------------------- soup end to end


@pytest.mark.parametrize("alpha", [0.0, 1.0, 0.5, 0.25])
def test_soup_equals_reference(pair, tmp_path, alpha):
    a, b, ta, tb = pair
    out = tmp_path / "out"
    evidence = soup(a, b, alpha, out, slice_bytes=SLICE, buffers=2, hash_output=alpha == 0.0)
    got = load_bundle(out)
    assert list(got) != [] and set(got) == set(LAYOUT)
    for name, t in got.items():
        if alpha == 0.0:
            want = ta[name]
        elif alpha == 1.0:
            want = tb[name]
        elif ta[name].dtype == torch.int64:
            want = ta[name]
        else:
            want = fp32_reference(ta[name], tb[name], alpha)
        assert t.dtype == want.dtype and t.shape == want.shape, name
        assert bytes(bits(t)) == bytes(bits(want)), name
    # A's layout: same shard files, same headers, index weight map equal to A's.
    assert [p.name for p in B.list_shards(out)] == [p.name for p in B.list_shards(a)]
    assert B.read_index(out) == B.read_index(a)
    for pa, po in zip(B.list_shards(a), B.list_shards(out)):
        assert B.read_shard_header(pa).raw == B.read_shard_header(po).raw
    if alpha == 0.0:
        assert evidence["output"]["shards_sha256"] == evidence["inputs"]["a"]["sha256"]
    index_total = json.loads((out / B.INDEX_NAME).read_text())["metadata"]["total_size"]
    assert index_total == sum(t.numel() * t.element_size() for t in ta.values())
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_evidence_and_serving_files(pair, tmp_path):
    a, b, _, _ = pair
    (a / EVIDENCE_FILE).write_text(json.dumps({"parquet_sha256": "abc"}))
    out = tmp_path / "out"
    soup(a, b, 0.4, out, slice_bytes=SLICE, hash_output=True)
    ev = json.loads((out / EVIDENCE_FILE).read_text())
    assert ev["kind"] == "soup" and ev["method"] == "linear" and ev["alpha"] == 0.4
    assert ev["options"]["alpha"] == 0.4 and ev["options"]["a"] == str(a)
    assert ev["inputs"]["a"]["sha256"] == {p.name: sha256_file(p) for p in B.list_shards(a)}
    assert ev["inputs"]["b"]["sha256"] == {p.name: sha256_file(p) for p in B.list_shards(b)}
    assert ev["output"]["shards_sha256"] == {p.name: sha256_file(p) for p in B.list_shards(out)}
    inputs = ev["inputs"]
    assert (
        inputs["a"]["training_evidence"] == {"parquet_sha256": "abc"}
        and inputs["b"]["training_evidence"] is None
    )
    assert ev["output"]["tensors"] == len(LAYOUT)
    assert ev["output"]["shards"] == [p.name for p in B.list_shards(a)]
    assert soup(a, b, 0.4, tmp_path / "out2", slice_bytes=SLICE)["output"]["shards_sha256"] is None
    assert ev["tokenizer_fingerprint"] == tokenizer_identity(a).sha256
    for name in (
        "tokenizer.json",
        "chat_template.jinja",
        "system_prompt.txt",
        "generation_config.json",
        "serving_config.json",
        "config.json",
    ):
        assert (out / name).read_bytes() == (a / name).read_bytes(), name


def test_single_file_bundles(tmp_path):
    ta, tb = make_tensors(3), make_tensors(4)
    a = write_bundle(tmp_path / "a", ta)
    b = write_bundle(tmp_path / "b", tb)
    out = tmp_path / "out"
    soup(a, b, 0.5, out, slice_bytes=SLICE)
    assert [p.name for p in B.list_shards(out)] == [B.SINGLE_NAME]
    assert not (out / B.INDEX_NAME).exists()
    got = load_file(str(out / B.SINGLE_NAME))
    want = fp32_reference(ta["lm_head.weight"], tb["lm_head.weight"], 0.5)
    assert torch.equal(got["lm_head.weight"], want)


# ---------------------------------------------------------------------------- refusals


def _variant(tmp_path, change) -> Path:
    layout = dict(LAYOUT)
    change(layout)
    tensors = make_tensors(5, layout)
    return write_bundle(tmp_path / "bad", tensors)


def test_shape_mismatch_names_first_tensor(pair, tmp_path):
    a, _, _, _ = pair

    def change(layout):
        layout["model.layers.0.mlp.down_proj.weight"] = ((96, 41), torch.bfloat16)
        layout["lm_head.weight"] = ((65, 96), torch.bfloat16)

    bad = _variant(tmp_path, change)
    with pytest.raises(BadInput, match=r"down_proj.*shape mismatch: A has \[96, 40\], B has \[96, 41\]") as e:
        soup(a, bad, 0.5, tmp_path / "out")
    assert e.value.exit_code == 2
    assert not (tmp_path / "out").exists()


def test_dtype_mismatch(pair, tmp_path):
    a, _, _, _ = pair
    bad = _variant(tmp_path, lambda lay: lay.update({"model.norm.weight": ((96,), torch.bfloat16)}))
    with pytest.raises(BadInput, match="model.norm.weight.*dtype mismatch: A has F32, B has BF16"):
        soup(a, bad, 0.5, tmp_path / "out")


def test_missing_and_extra_keys(pair, tmp_path):
    a, _, _, _ = pair
    bad = _variant(tmp_path, lambda lay: lay.pop("model.layers.1.scale"))
    with pytest.raises(BadInput, match="model.layers.1.scale.*in A .* but not in B"):
        soup(a, bad, 0.5, tmp_path / "out")
    with pytest.raises(BadInput, match="model.layers.1.scale.*in B .* but not in A"):
        soup(bad, a, 0.5, tmp_path / "out")


def test_missing_shard(pair, tmp_path):
    a, b, _, _ = pair
    (a / B.shard_file_name(2, 3)).unlink()
    with pytest.raises(BadInput, match="model-00002-of-00003.safetensors.*missing"):
        soup(a, b, 0.5, tmp_path / "out")


def test_truncated_shard(pair, tmp_path):
    a, b, _, _ = pair
    shard = b / B.SINGLE_NAME
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(BadInput, match="truncated"):
        soup(a, b, 0.5, tmp_path / "out")


def test_pickle_checkpoint_refused(pair, tmp_path):
    a, _, _, _ = pair
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    torch.save({"w": torch.zeros(2)}, pickled / "pytorch_model.bin")
    with pytest.raises(BadInput, match="pickle checkpoint refused.*safetensors only"):
        B.list_shards(pickled)
    with pytest.raises(BadInput, match="pickle checkpoint refused"):
        soup(a, pickled, 0.5, tmp_path / "out")
    # An index that points at a pickle file is refused too, as is reading one as a shard.
    (pickled / B.INDEX_NAME).write_text(json.dumps({"weight_map": {"w": "pytorch_model.bin"}}))
    with pytest.raises(BadInput, match="pickle checkpoint refused"):
        B.list_shards(pickled)
    with pytest.raises(BadInput, match="pickle checkpoint refused"):
        B.read_shard_header(pickled / "pytorch_model.bin")


def test_tokenizer_mismatch_refused(pair, tmp_path):
    a, _, _, tb = pair
    other = write_bundle(tmp_path / "other", tb, template="{{ different }}")
    with pytest.raises(BadInput, match="differ in chat template"):
        soup(a, other, 0.5, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_integer_tensor_must_match_and_failure_leaves_nothing(pair, tmp_path):
    a, _, ta, tb = pair
    tb = dict(tb)
    tb["model.position_ids"] = tb["model.position_ids"] + 1
    b = write_bundle(tmp_path / "b2", tb)
    out = tmp_path / "out"
    with pytest.raises(BadInput, match="model.position_ids.*must be equal"):
        soup(a, b, 0.5, out, slice_bytes=SLICE)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_bad_arguments(pair, tmp_path):
    a, b, _, _ = pair
    with pytest.raises(BadInput, match="alpha"):
        soup(a, b, float("nan"), tmp_path / "out")
    with pytest.raises(BadInput, match="must differ from every input"):
        soup(a, b, 0.5, a)
    stale = tmp_path / "stale"
    stale.mkdir()
    (stale / "model-00001-of-00009.safetensors").write_bytes(b"x")
    with pytest.raises(BadInput, match="already holds files .* not a pairstore bundle"):
        soup(a, b, 0.5, stale)


# ---------------------------------------------------------------------------- bundle I/O


def test_sharded_writer_round_trip(tmp_path):
    tensors = make_tensors(9)
    with B.ShardedWriter(tmp_path / "w", max_shard_bytes=20_000) as w:
        for name, t in tensors.items():
            dtype = {
                torch.bfloat16: "BF16",
                torch.float16: "F16",
                torch.float32: "F32",
                torch.float64: "F64",
                torch.int64: "I64",
            }[t.dtype]
            w.add(name, dtype, tuple(t.shape), bits(t))
    shards = B.list_shards(tmp_path / "w")
    assert len(shards) > 1 and [p.name for p in shards] == sorted(p.name for p in shards)
    got = load_bundle(tmp_path / "w")
    assert all(torch.equal(got[k], tensors[k]) for k in tensors)
    assert [t.name for _, t in B.bundle_tensors(tmp_path / "w")] == list(tensors)


def test_header_checks(tmp_path):
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", 10**9) + b"{}")
    with pytest.raises(BadInput, match="header length"):
        B.read_shard_header(p)
    header = b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,12]}}'
    p.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 12)
    with pytest.raises(BadInput, match="field 'w'.*do not hold"):
        B.read_shard_header(p)
    with pytest.raises(BadInput, match="no safetensors weights"):
        B.list_shards(tmp_path)
    with pytest.raises(PairstoreError):
        B.write_shard(tmp_path / "y.safetensors", [("w", "F32", (3,), np.zeros(2, np.float32))])
    assert not list(tmp_path.glob(".y.safetensors*"))


def test_tokenizer_identity_and_copy(pair, tmp_path):
    a, b, _, _ = pair
    assert tokenizer_identity(a) == tokenizer_identity(b)
    (b / "tokenizer_config.json").write_text('{"eos_token": "<end>"}')
    assert tokenizer_identity(a).sha256 != tokenizer_identity(b).sha256
    copied = B.copy_serving_files(a, tmp_path / "c")
    assert "chat_template.jinja" in copied and "config.json" in copied
    assert not list((tmp_path / "c").glob("*.safetensors"))


# ---------------------------------------------------------------------------- CLI


def test_cli_soup_registers_checkpoint(pair, tmp_path):
    a, b, _, _ = pair
    db = tmp_path / "store.duckdb"
    out = tmp_path / "souped"
    r = CliRunner().invoke(
        cli,
        [
            "--db",
            str(db),
            "train",
            "soup",
            str(a),
            str(b),
            "--alpha",
            "0.5",
            "--out",
            str(out),
            "--slice-mb",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "registered checkpoint souped" in r.output
    from pairstore.store.store import open_store

    with open_store(str(db), read_only=True) as store:
        row = store.rows(
            "SELECT kind, parents, alpha, path, evidence FROM checkpoints WHERE name = 'souped'"
        )[0]
    assert row["kind"] == "soup" and list(row["parents"]) == ["a", "b"] and row["alpha"] == 0.5
    assert row["path"] == str(out.resolve())
    evidence = json.loads(row["evidence"])
    assert evidence["alpha"] == 0.5 and evidence["inputs"]["a"]["sha256"]
    assert (out / B.INDEX_NAME).stat().st_mode & 0o044  # readable by others, not mkstemp's 0600


def test_cli_soup_exit_codes(pair, tmp_path, monkeypatch):
    a, _, _, _ = pair
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PAIRSTORE_DB", raising=False)
    bad = _variant(tmp_path, lambda lay: lay.update({"lm_head.weight": ((65, 96), torch.bfloat16)}))
    r = CliRunner().invoke(cli, ["train", "soup", str(a), str(bad), "--alpha", "0.5", "--out", "o"])
    assert r.exit_code == 2
    assert "lm_head.weight" in r.output and "shape mismatch" in r.output
    r = CliRunner().invoke(cli, ["train", "soup", str(a), str(a / "nope"), "--alpha", "0.5", "--out", "o"])
    assert r.exit_code == 2 and "does not exist" in r.output
    # Without a store the soup is written and not registered, and no store file is created.
    r = CliRunner().invoke(cli, ["train", "soup", str(a), str(a.parent / "b"), "--alpha", "1", "--out", "o"])
    assert r.exit_code == 0, r.output
    assert "not registered" in r.output and not (tmp_path / "pairstore.duckdb").exists()
    r = CliRunner().invoke(cli, ["train", "soup", "--help"])
    assert r.exit_code == 0 and "alpha" in r.output


def test_check_bundle_refuses_remote_code(pair, tmp_path):
    a, _, _, _ = pair
    assert B.check_bundle(a) == B.list_shards(a)
    (a / "config.json").write_text('{"model_type": "llama", "auto_map": {"AutoModel": "modeling_x.X"}}')
    with pytest.raises(BadInput, match="auto_map.*trust_remote_code"):
        B.check_bundle(a)
    assert B.check_bundle(a, trust_remote_code=True)
    (a / "config.json").write_text('{"model_type": "llama"}')
    (a / "modeling_x.py").write_text("import os\n")
    with pytest.raises(BadInput, match="Python code"):
        B.check_bundle(a)
    kwargs = B.from_pretrained_kwargs()
    assert kwargs["use_safetensors"] is True and kwargs["trust_remote_code"] is False


def _as_transformers_4(src: Path, dst: Path) -> Path:
    """The same tokenizer and config as transformers 4.x / tokenizers < 0.20 write them: merges as "a b"
    strings, the chat template inside tokenizer_config.json only, special tokens as AddedToken dicts in
    special_tokens_map.json, torch_dtype and rope_theta instead of dtype and rope_parameters."""
    shutil.copytree(src, dst)
    tj = json.loads((dst / "tokenizer.json").read_text())
    tj["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in tj["model"].get("merges", [])]
    tj["truncation"] = {"max_length": 7, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}
    (dst / "tokenizer.json").write_text(json.dumps(tj, indent=2))
    template = (dst / "chat_template.jinja").read_text()
    (dst / "chat_template.jinja").unlink()
    tc = json.loads((dst / "tokenizer_config.json").read_text())
    tc["chat_template"] = template
    eos = tc.pop("eos_token")
    (dst / "tokenizer_config.json").write_text(json.dumps(tc))
    (dst / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": {"content": eos, "lstrip": False, "__type": "AddedToken"}})
    )
    cfg = json.loads((dst / "config.json").read_text())
    cfg.pop("dtype", None)
    cfg.pop("rope_parameters", None)
    cfg.update(torch_dtype="float32", rope_theta=10000.0, rope_scaling=None, transformers_version="4.46.3")
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def test_a_bundle_in_the_other_majors_spelling_is_the_same_model(tiny, tmp_path):
    v4 = _as_transformers_4(tiny, tmp_path / "v4")
    assert tokenizer_identity(v4) == tokenizer_identity(tiny)
    assert family_differences(tiny, v4) == []
    # A real difference is still one: another merge order, another added token id, another template.
    tj = json.loads((v4 / "tokenizer.json").read_text())
    tj["model"]["merges"] = tj["model"]["merges"][::-1]
    (v4 / "tokenizer.json").write_text(json.dumps(tj))
    assert family_differences(tiny, v4) == ["tokenizer.json model"]
    tj["model"]["merges"] = tj["model"]["merges"][::-1]
    tj["added_tokens"][0]["id"] += 1000
    (v4 / "tokenizer.json").write_text(json.dumps(tj))
    assert family_differences(tiny, v4) == ["tokenizer.json added_tokens"]
    tj["added_tokens"][0]["id"] -= 1000
    (v4 / "tokenizer.json").write_text(json.dumps(tj))
    tc = json.loads((v4 / "tokenizer_config.json").read_text())
    tc["chat_template"] += " "
    (v4 / "tokenizer_config.json").write_text(json.dumps(tc))
    assert family_differences(tiny, v4) == ["chat template"]


def test_config_fields_compare_by_value_in_either_spelling(tiny, tmp_path):
    v4 = _as_transformers_4(tiny, tmp_path / "v4")
    cfg = json.loads((v4 / "config.json").read_text())
    cfg["rope_theta"] = 500000.0
    (v4 / "config.json").write_text(json.dumps(cfg))
    assert family_differences(tiny, v4) == ["config.json rope_theta (10000.0 vs 500000.0)"]
    cfg["rope_theta"] = 10000.0
    del cfg["num_key_value_heads"]  # a shape field only one bundle states is not assumed equal
    (v4 / "config.json").write_text(json.dumps(cfg))
    assert family_differences(tiny, v4) == ["config.json num_key_value_heads (in one bundle only)"]


def test_a_bundle_without_a_readable_tokenizer_is_refused(tiny, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "tokenizer.json").write_text('{"model": "x"}')
    with pytest.raises(BadInput, match="tokenizer.json has no tokenizer model"):
        tokenizer_identity(bare)
    (bare / "tokenizer.json").unlink()
    with pytest.raises(BadInput, match="unknown"):
        tokenizer_identity(bare)
