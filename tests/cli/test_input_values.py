"""Every input value checked where it is read: times in range, finite numbers, no key twice, one BOM rule,
damaged columnar files named; hostile bundle files refused naming file and field."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pairstore.errors import BadInput
from pairstore.ingest.records import Fields, read_records


def _records(path):
    return list(read_records(path))


@pytest.mark.parametrize(
    "when", ["0001-01-01T00:30:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00", "1900-01-01"]
)
def test_times_out_of_range_name_the_field(when):
    with pytest.raises(BadInput, match="voted_at.*out of range"):
        Fields({"voted_at": when}, "b.jsonl", 3).timestamp("voted_at")


def test_times_in_range_become_naive_utc():
    t = Fields({"t": "2024-05-01T12:00:00+02:00"}, "b.jsonl", 1).timestamp("t")
    assert t.isoformat() == "2024-05-01T10:00:00"


@pytest.mark.parametrize("text", ['{"temperature": NaN}', '{"temperature": 1e400}', '{"t": -Infinity}'])
def test_numbers_that_are_not_finite_are_refused(tmp_path, text):
    p = tmp_path / "g.jsonl"
    p.write_text(text + "\n")
    with pytest.raises(BadInput, match="line 1.*not a finite number"):
        _records(p)


def test_a_float_field_must_be_finite():
    with pytest.raises(BadInput, match="field 'temperature'.*finite"):
        Fields({"temperature": float("inf")}, "g.parquet", 2).float("temperature")


def test_a_key_twice_in_one_object_is_refused(tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_text('{"battle_id": "a", "vote": "win"}\n{"battle_id": "b", "vote": "win", "vote": "loss"}\n')
    with pytest.raises(BadInput, match="line 2, field 'vote': a key appears twice"):
        _records(p)


def test_one_bom_rule_for_jsonl_and_csv(tmp_path):
    j = tmp_path / "a.jsonl"
    j.write_bytes(b'\xef\xbb\xbf{"a": "1"}\n')
    c = tmp_path / "a.csv"
    c.write_bytes(b"\xef\xbb\xbfa\n1\n")
    assert _records(j) == [(1, {"a": "1"})] and _records(c) == [(2, {"a": "1"})]
    j.write_bytes(b'{"a": "1"}\n\xef\xbb\xbf{"a": "2"}\n')  # a BOM inside the file is not a BOM
    with pytest.raises(BadInput, match="line 2"):
        _records(j)


def test_a_damaged_parquet_data_page_names_the_file(tmp_path):
    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"a": [f"value {i} " * 20 for i in range(20000)]}), p, compression="snappy")
    data = bytearray(p.read_bytes())
    for i in range(200, 40000):
        data[i] = (data[i] * 7 + 13) % 256
    p.write_bytes(bytes(data))
    with pytest.raises(BadInput) as e:
        _records(p)
    assert str(p) in str(e.value)


# ---------------------------------------------------------------------------- bundles


def _shard(path, header: dict, data: bytes = b"") -> None:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


@pytest.mark.parametrize(
    "entry, words",
    [
        (
            {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]},
            "shape must be a list of non-negative integers",
        ),
        ({"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8.0]}, "data_offsets must be two"),
        ({"dtype": 3, "shape": [2], "data_offsets": [0, 8]}, "dtype must be a string"),
        ({"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}, "data_offsets must be two"),
        ({"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}, "shape must be"),
        ({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}, "do not hold"),
        ({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}, "truncated|fit"),
    ],
)
def test_hostile_safetensors_headers_are_refused(tmp_path, entry, words):
    from train.bundle import read_shard_header

    p = tmp_path / "model.safetensors"
    _shard(p, {"w": entry}, b"\0" * 8)
    with pytest.raises(BadInput, match=words) as e:
        read_shard_header(p)
    assert str(p) in str(e.value)


def test_overlapping_tensors_and_duplicate_header_keys_are_refused(tmp_path):
    from train.bundle import read_shard_header

    p = tmp_path / "model.safetensors"
    _shard(
        p,
        {
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
        },
        b"\0" * 12,
    )
    with pytest.raises(BadInput, match="contiguous"):
        read_shard_header(p)
    raw = (
        b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
        b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
    )
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 4)
    with pytest.raises(BadInput, match="twice"):
        read_shard_header(p)


@pytest.mark.parametrize(
    "config, field",
    [
        ({"peft_type": "LORA", "r": 0, "lora_alpha": 16, "target_modules": ["q_proj"]}, "r"),
        ({"peft_type": "LORA", "r": "8", "lora_alpha": 16, "target_modules": ["q_proj"]}, "r"),
        ({"peft_type": "LORA", "r": 8, "target_modules": ["q_proj"]}, "lora_alpha"),
        ({"peft_type": "LORA", "r": 8, "lora_alpha": 0, "target_modules": ["q_proj"]}, "lora_alpha"),
        ({"peft_type": "LORA", "r": True, "lora_alpha": 16, "target_modules": ["q_proj"]}, "r"),
        (
            {
                "peft_type": "LORA",
                "r": 8,
                "lora_alpha": 16,
                "target_modules": ["q"],
                "rank_pattern": {"q": 0},
            },
            "rank_pattern",
        ),
    ],
)
def test_malformed_adapter_configs_name_file_and_field(tmp_path, config, field):
    from train.merge import adapter_files

    (tmp_path / "adapter_config.json").write_text(json.dumps(config))
    _shard(tmp_path / "adapter_model.safetensors", {})
    with pytest.raises(BadInput) as e:
        adapter_files(tmp_path)
    assert e.value.field == field and "adapter_config.json" in str(e.value)


def test_malformed_tokenizer_and_config_are_refused(tiny, tmp_path, run_cli):
    import shutil

    from train.bundle import check_bundle

    for name, text, words in [
        ("tokenizer.json", "{}", "tokenizer.json"),
        ("config.json", '{"model_type": 3}', "model_type"),
        ("config.json", '{"hidden_size": "64"}', "hidden_size"),
        ("config.json", '{"a": 1, "a": 2}', "twice"),
        ("tokenizer_config.json", "[]", "JSON object"),
    ]:
        bundle = tmp_path / f"b-{name}-{len(text)}"
        shutil.copytree(tiny, bundle)
        (bundle / name).write_text(text)
        with pytest.raises(BadInput, match=words):
            check_bundle(bundle)
        suite = tmp_path / "suite.jsonl"
        suite.write_text(json.dumps({"item_id": "1", "prompt": "2+2?", "gold": "4"}) + "\n")
        r = run_cli("eval", "--model", bundle, "--suite", "s", "--path", suite)
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and words in r.output, r.output


def test_remote_code_is_refused_by_eval(tiny, tmp_path, run_cli):
    import shutil

    bundle = tmp_path / "code"
    shutil.copytree(tiny, bundle)
    config = json.loads((bundle / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_x.Model"}
    (bundle / "config.json").write_text(json.dumps(config))
    (bundle / "modeling_x.py").write_text("raise SystemExit('ran remote code')\n")
    suite = tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"item_id": "1", "prompt": "2+2?", "gold": "4"}) + "\n")
    r = run_cli("eval", "--model", bundle, "--suite", "s", "--path", suite)
    assert r.exit_code == 2 and "auto_map" in r.output, r.output


@pytest.mark.parametrize(
    "args",
    [["export", "--bogus"], ["--bogus"], ["holdout", "sample"], ["train", "soup", "a"], ["no-such-command"]],
)
def test_usage_errors_are_one_line(run_cli, args):
    r = run_cli(*args)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "--help" in lines[0], (
        r.output
    )
