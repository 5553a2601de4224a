"""Decontamination and benchmark n-grams: planted contaminated rows, formats, the gate's lookup."""

from __future__ import annotations

import json
import string

import pyarrow as pa
import pytest

from audits.decontam import decontam, load_benchmark
from pairstore.errors import BadInput
from pairstore.holdout.ngrams import benchmark_hits, register_benchmark, words
from pairstore.tables.pairs import Pair, add_pairs
from tests.paths import FIXTURES

GSM = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. How many clips did Natalia sell altogether in April and May?",
        "answer": "#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. "
        "Yesterday, she just did 50 minutes of babysitting. "
        "How much did she earn?",
        "answer": "#### 10",
    },
    {
        "question": "Betty is saving money for a new wallet which costs $100. "
        "Betty has only half of the money "
        "she needs. How much more money does Betty need to buy the wallet?",
        "answer": "#### 5",
    },
]


def _lm_eval_ngrams(text: str, n: int) -> set[str]:
    """The lm-evaluation-harness janitor, written out plainly, with its one change: punctuation is a word
    break ("it's" is "it s"), as everywhere in the holdout matcher, so no two words are glued."""
    table = str.maketrans(
        string.ascii_lowercase + string.ascii_uppercase + string.punctuation,
        string.ascii_lowercase * 2 + " " * len(string.punctuation),
    )
    toks = text.translate(table).split()
    return {" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def test_words_are_the_janitor_words_with_punctuation_as_a_word_break():
    texts = [
        "Hello, World!  it's\ta TEST.",
        "  lead  and trail  ",
        "",
        "Ünïcode STRAßE x\u00a0y",
        "a\x1cb\u2003c\u3000d\u2028e \u201cquoted\u201d\u00e9\u2014dash\x85",
        "\u3001\u30a2 x",
    ]
    flat, doc = words(texts)
    table = str.maketrans(
        string.ascii_lowercase + string.ascii_uppercase + string.punctuation,
        string.ascii_lowercase * 2 + " " * len(string.punctuation),
    )
    expected = [(i, w) for i, t in enumerate(texts) for w in t.translate(table).split()]
    assert list(zip(doc.tolist(), flat.to_pylist())) == expected


def make_store(store, tmp_path):
    planted = (
        "Here is a puzzle for you. " + GSM[0]["question"].upper().replace(",", " ,") + " Think carefully."
    )
    partial = "Weng earns $12 an hour for babysitting. Yesterday she did"  # 10 words of item 1 only
    res = add_pairs(
        store,
        [
            Pair(prompt=planted, chosen="72", rejected="70", source="self_repair"),
            Pair(prompt="What is the capital of France?", chosen="Paris", rejected="Lyon", source="style"),
            Pair(prompt=partial, chosen="x", rejected="y", source="style"),
        ],
        miner="t",
        miner_version="1",
    )
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES ('e1', 'm11a', 'export', ?, 's', 2, 'c')",
        [str(tmp_path / "m11a.parquet")],
    )
    store.con.execute("INSERT INTO export_rows VALUES ('e1', 0, ?), ('e1', 1, ?)", res.pair_ids[:2])
    return res.pair_ids


def test_planted_contamination_found_with_its_item(store, tmp_path, write_jsonl):
    ids = make_store(store, tmp_path)
    bench = write_jsonl(tmp_path / "gsm8k_test.jsonl", GSM)
    report = decontam(store, "gsm8k-test", bench)
    assert report.items == 3 and report.training_rows == 2
    assert report.contaminated_rows == 1 and report.contaminated_items == 1
    (row,) = report.rows
    assert (row.round, row.row_index, row.pair_id, row.item_id) == ("m11a", 0, ids[0], "0")
    assert row.item_text.startswith("Natalia sold clips")
    # shared distinct 13-grams = every window of the item (the whole question is in the row)
    assert row.shared_ngrams == len(_lm_eval_ngrams(GSM[0]["question"], 13))

    everything = decontam(store, "gsm8k-test", bench, all_pairs=True)
    assert everything.training_rows == 3 and everything.contaminated_rows == 1
    stricter = decontam(store, "gsm8k-test", bench, all_pairs=True, n=8)
    assert stricter.contaminated_rows == 2
    assert {r.item_id for r in stricter.rows} == {"0", "1"}


def test_register_feeds_benchmark_hits(store, tmp_path, write_jsonl):
    bench = write_jsonl(tmp_path / "gsm8k_test.jsonl", GSM)
    items = load_benchmark(bench)
    register_benchmark(store, "gsm8k-test", [(it.item_id, it.text) for it in items])
    report = decontam(store, "gsm8k-test", items, registered=True)
    assert report.registered
    assert store.scalar("SELECT count(*) FROM benchmark_refs WHERE benchmark = 'gsm8k-test'") == 3
    assert store.scalar("SELECT count(*) FROM audit_log WHERE action = 'benchmark_register'") == 1
    texts = pa.table(
        {
            "row_index": pa.array([10, 11, 12], pa.int64()),
            "text": ["intro. " + GSM[2]["question"].lower(), "nothing to see here", GSM[1]["question"][:40]],
        }
    )
    assert benchmark_hits(store, texts) == [(10, "gsm8k-test", "2")]
    assert benchmark_hits(store, texts, n=8) == []  # nothing registered with n=8
    # Re-registering replaces, never duplicates.
    register_benchmark(store, "gsm8k-test", [("a", GSM[0]["question"])])
    assert store.scalar("SELECT count(*) FROM benchmark_refs WHERE benchmark = 'gsm8k-test'") == 1
    assert benchmark_hits(store, texts) == []


def test_hashes_agree_with_plain_python_reference(store):
    """Rows flagged by the vectorized path are exactly the rows a set-of-13-grams scan flags."""
    items = [GSM[0]["question"], GSM[1]["question"], GSM[2]["question"]]
    register_benchmark(store, "b", list(zip(["0", "1", "2"], items)))
    ref = set().union(*[_lm_eval_ngrams(t, 13) for t in items])
    rows = [
        "x " + items[0][:90] + " y",
        "Betty is saving money for a new wallet which costs $100. Betty has",
        items[1].replace(" ", "\n"),
        "unrelated",
        items[2][20:],
    ]
    texts = pa.table({"row_index": pa.array(range(len(rows)), pa.int64()), "text": rows})
    got = sorted({r for r, _, _ in benchmark_hits(store, texts)})
    want = [i for i, t in enumerate(rows) if _lm_eval_ngrams(t, 13) & ref]
    assert got == want and got


def test_benchmark_formats(tmp_path, write_jsonl):
    math = load_benchmark(
        write_jsonl(
            tmp_path / "math.jsonl",
            [{"problem": "Find $x$.", "solution": "x=1", "unique_id": "test/algebra/1.json"}],
        )
    )
    assert math[0].item_id == "test/algebra/1.json" and math[0].text == "Find $x$."
    ifeval = load_benchmark(
        write_jsonl(
            tmp_path / "ifeval.jsonl",
            [{"key": 1000, "prompt": "Write a poem.", "instruction_id_list": ["x"], "kwargs": [{}]}],
        )
    )
    assert (ifeval[0].item_id, ifeval[0].text) == ("1000", "Write a poem.")
    mmlu = load_benchmark(
        write_jsonl(
            tmp_path / "mmlu.jsonl",
            [{"question": "What is 2+2?", "subject": "math", "choices": ["1", "2", "3", "4"], "answer": 3}],
        )
    )
    assert mmlu[0].text == "What is 2+2?" and mmlu[0].item_id == "0"
    csv_path = tmp_path / "abstract_algebra_test.csv"
    csv_path.write_text('"Find the degree, of Q.",0,4,2,6,B\n', encoding="utf-8")
    assert load_benchmark(csv_path)[0].text == "Find the degree, of Q."
    gsm = load_benchmark(write_jsonl(tmp_path / "g.jsonl", GSM))
    assert [i.item_id for i in gsm] == ["0", "1", "2"]
    with pytest.raises(BadInput) as e:
        load_benchmark(write_jsonl(tmp_path / "bad.jsonl", [{"question": "ok"}, {"question": ""}]))
    assert "line 2" in str(e.value) and "question" in str(e.value)
    with pytest.raises(BadInput):
        load_benchmark(write_jsonl(tmp_path / "odd.jsonl", [{"foo": 1}]))


def test_cli_decontam(store, db_path, tmp_path, run_cli, write_jsonl):
    make_store(store, tmp_path)
    store.close()
    bench = write_jsonl(tmp_path / "gsm8k_test.jsonl", GSM)
    res = run_cli("audit", "decontam", "--benchmark", "gsm8k-test", "--path", bench, "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["contaminated_rows"] == 1 and d["rows"][0]["item_id"] == "0" and not d["registered"]
    res = run_cli("audit", "decontam", "--benchmark", "gsm8k-test", "--path", bench, "--register")
    assert res.exit_code == 0, res.output
    assert "1 contaminated" in res.output and "registered" in res.output
    res = run_cli("sql", "SELECT count(*) AS n FROM benchmark_refs")
    assert "3" in res.output
    # A read-only store with every pair (the open leaves a partly fetched result on the connection).
    res = run_cli(
        "audit", "decontam", "--benchmark", "gsm8k-test", "--path", bench, "--all-pairs", "--n", "8"
    )
    assert res.exit_code == 0, res.output
    assert "2 contaminated" in res.output
    res = run_cli("audit", "decontam", "--benchmark", "x", "--path", str(tmp_path / "nope.jsonl"))
    assert res.exit_code == 2 and "nope.jsonl" in res.output


def test_stored_hash_is_the_documented_formula(store):
    import xxhash

    from pairstore.holdout.ngrams import Q

    text = "One two three four five six seven eight nine ten eleven twelve thirteen"
    register_benchmark(store, "b", [("x", text)])
    words_ = text.lower().split()
    want = sum(xxhash.xxh3_64_intdigest(w.encode()) * pow(Q, k, 1 << 64) for k, w in enumerate(words_)) % (
        1 << 64
    )
    assert store.rows("SELECT ngram FROM benchmark_ngrams") == [{"ngram": want}]


def test_benchmark_read_from_hub_and_save_to_disk_folders(tmp_path):
    """A benchmark given as the dataset's Hub folder, or as a `save_to_disk` folder made by the real
    `datasets` library, reads the test split, the same items as the file."""

    import datasets

    real = FIXTURES / "real"
    from_file = load_benchmark(real / "MATH-500" / "test.jsonl")
    assert len(from_file) == 2 and load_benchmark(real / "MATH-500") == from_file
    gsm8k = load_benchmark(real / "gsm8k" / "main")  # the test parquet of the Hub layout, not train
    assert [i.text for i in gsm8k] and all("Janet" in i.text for i in gsm8k)
    rows = [json.loads(line) for line in (real / "MATH-500" / "test.jsonl").read_text().splitlines()]
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "saved"))
    assert [i.text for i in load_benchmark(tmp_path / "saved")] == [i.text for i in from_file]


def test_a_registered_file_is_read_whole_and_streamed(store, tmp_path, write_jsonl, monkeypatch):
    """A registered mixture with no stored rows is read from its file as the leak audit reads it: every
    string of every record, in batches, each distinct string once; a row's count is its strings' shared
    n-grams together."""
    from pairstore.holdout import file_texts

    monkeypatch.setattr(file_texts, "BLOCK_BYTES", 256)  # many batches: copies across them
    q0, q1 = GSM[0]["question"], GSM[1]["question"]
    recs = []
    for i in range(30):
        recs.append({"prompt": f"plain question {i}", "chosen": "a", "rejected": "b", "pair_id": f"p{i}"})
    recs[3]["response"] = "Sure. " + q0  # a column the old reader did not read
    recs[11]["chosen"] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"arguments": json.dumps({"q": q0})}}],
        }
    ]
    recs[12]["metadata"] = {"notes": [q1]}
    recs[20]["response"] = "Sure. " + q0  # a copy, in a later batch
    path = write_jsonl(tmp_path / "attached.jsonl", recs)
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES ('e9', 'att', 'attached', ?, 's', 30, 'c')",
        [path],
    )
    bench = write_jsonl(tmp_path / "gsm8k_test.jsonl", GSM)
    report = decontam(store, "gsm8k-test", bench)
    assert report.training_rows == 30
    got = sorted((r.row_index, r.pair_id, r.item_id, r.shared_ngrams, r.round) for r in report.rows)
    n0 = len(_lm_eval_ngrams(q0, 13))
    n1 = len(_lm_eval_ngrams(q1, 13))
    assert got == [
        (3, "p3", "0", n0, "att"),
        (11, "p11", "0", n0, "att"),
        (12, "p12", "1", n1, "att"),
        (20, "p20", "0", n0, "att"),
    ]
    assert report.contaminated_rows == 4 and report.contaminated_items == 2
    # A question split over two strings of one row is counted as their n-grams together (none across).
    words = q0.split()
    half = len(words) // 2
    recs2 = [{"prompt": " ".join(words[:half]), "chosen": " ".join(words[half:]), "rejected": "x"}]
    path2 = write_jsonl(tmp_path / "split.jsonl", recs2)
    store.con.execute(
        "INSERT INTO exports (export_id, round, kind, path, sha256, rows, content_hash) "
        "VALUES ('e10', 'att2', 'attached', ?, 's', 1, 'c')",
        [path2],
    )
    split = [r for r in decontam(store, "gsm8k-test", bench).rows if r.round == "att2"]
    want = len(_lm_eval_ngrams(" ".join(words[:half]), 13)) + len(_lm_eval_ngrams(" ".join(words[half:]), 13))
    assert want > 0 and [(r.item_id, r.shared_ngrams) for r in split] == [("0", want)]
