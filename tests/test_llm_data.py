"""The hub-loading path on local data written in each hub dataset's schema (no download, ever)."""

from __future__ import annotations

import string

import pytest

from grpo_core.errors import DataError, GrpoError, ParameterError
from grpo_core.llm.data import (
    BENCHMARKS,
    load_benchmark,
    load_gsm8k,
    load_hub_dataset,
    reference_value,
    write_local_dataset,
)

pytestmark = pytest.mark.usefixtures("offline")


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


GSM8K_ROWS = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
        "in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72",
    },
    {"question": "A farm earns how much?", "answer": "It earns 1,080 dollars.\n#### 1,080"},
    {"question": "How cold?", "answer": "It is -3 degrees.\n#### -3"},
]

# One or two rows per benchmark in the schema of its hub repository (column names and value types).
SCHEMAS = {
    "gsm8k": {
        "config": "main",
        "split": "test",
        "rows": GSM8K_ROWS,
        "expected": [72.0, 1080.0, -3.0],
        "skipped": 0,
    },
    "gsm_plus": {
        "split": "testmini",
        "rows": [
            {
                "question": "q1",
                "solution": "s",
                "answer": "18",
                "perturbation_type": "numerical substitution",
                "seed_question": "q0",
                "seed_solution": "s0",
                "seed_answer": "16",
            },
            {
                "question": "q2",
                "solution": "s",
                "answer": "None",
                "perturbation_type": "critical thinking",
                "seed_question": "q0",
                "seed_solution": "s0",
                "seed_answer": "16",
            },
        ],
        "expected": [18.0],
        "skipped": 1,
    },
    "svamp": {
        "split": "test",
        "rows": [
            {
                "ID": "chal-1",
                "Body": "Each pack has 12 pens.",
                "Question": "How many in 3 packs?",
                "Equation": "( 12.0 * 3.0 )",
                "Answer": 36.0,
                "Type": "Multiplication",
                "question_concat": "x",
            }
        ],
        "expected": [36.0],
        "skipped": 0,
    },
    "asdiv": {
        "split": "validation",
        "rows": [
            {
                "body": "Seven red apples and two green apples are in the basket.",
                "question": "How many apples?",
                "solution_type": "Addition",
                "answer": "9 (apples)",
                "formula": "7+2=9",
            },
            {"body": "b", "question": "q", "solution_type": "x", "answer": "3;4", "formula": "f"},
        ],
        "expected": [9.0],
        "skipped": 1,
    },
    "gsm_hard": {
        "split": "train",
        "rows": [{"input": "Janet has 1603 ducks...", "code": "def f(): ...", "target": 2187.5}],
        "expected": [2187.5],
        "skipped": 0,
    },
    "math500": {
        "split": "test",
        "rows": [
            {
                "problem": "Convert (0,3) to polar.",
                "solution": "...",
                "answer": r"\left( 3, \frac{\pi}{2} \right)",
                "subject": "Precalculus",
                "level": 2,
                "unique_id": "test/precalculus/807.json",
            }
        ],
        "expected": [r"\left( 3, \frac{\pi}{2} \right)"],
        "skipped": 0,
    },
    "amc23": {
        "split": "test",
        "rows": [{"id": 0, "question": "What is 1+1?", "answer": 2.0, "url": "u"}],
        "expected": [2.0],
        "skipped": 0,
    },
    "aime24": {
        "split": "train",
        "rows": [
            {
                "id": 60,
                "problem": "Every morning Aya ...",
                "solution": "...",
                "answer": "204",
                "url": "u",
                "year": 2024,
            }
        ],
        "expected": [204.0],
        "skipped": 0,
    },
    "aime25": {
        "split": "test",
        "rows": [{"id": "0", "problem": "Find the sum ...", "answer": "70"}],
        "expected": [70.0],
        "skipped": 0,
    },
}


def test_every_benchmark_has_a_schema_test():
    assert set(SCHEMAS) == set(BENCHMARKS)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_benchmark_loads_through_the_hub_path(name, tmp_path):
    spec, schema = BENCHMARKS[name], SCHEMAS[name]
    assert schema["split"] == spec.split
    root = write_local_dataset(tmp_path / name, {spec.split: schema["rows"]}, config=schema.get("config", ""))
    items, skipped = load_benchmark(name, path=str(root))
    got = [it["reference"] for it in items]
    expected = schema["expected"]
    if spec.answer_kind == "math":
        assert got == [str(e) if not isinstance(e, str) else e for e in expected]
    else:
        assert got == pytest.approx(expected)
    assert skipped == schema["skipped"]
    assert all(it["question"] for it in items)
    if name == "svamp":
        assert items[0]["question"] == "Each pack has 12 pens. How many in 3 packs?"


def test_gsm8k_train_loader_and_limit(tmp_path):
    root = write_local_dataset(
        tmp_path / "gsm8k", {"train": GSM8K_ROWS, "test": GSM8K_ROWS[:1]}, config="main"
    )
    items = load_gsm8k(str(root), "main", "train")
    assert [it["reference"] for it in items] == [72.0, 1080.0, -3.0]
    assert items[0]["solution"].endswith("#### 72")
    assert len(load_gsm8k(str(root), "main", "train", limit=2)) == 2
    assert len(load_gsm8k(str(root), "main", "test")) == 1


def test_a_local_folder_is_read_afresh_not_from_the_cache_of_an_earlier_one(tmp_path):
    rows = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(6)]
    first = write_local_dataset(tmp_path / "a" / "gsm8k", {"train": rows[:3]}, config="main")
    assert [it["reference"] for it in load_gsm8k(str(first), "main", "train")] == [0.0, 1.0, 2.0]
    # same folder name and configuration, other rows: offline, datasets' cache used to return the first's
    second = write_local_dataset(tmp_path / "b" / "gsm8k", {"train": rows}, config="main")
    assert [it["reference"] for it in load_gsm8k(str(second), "main", "train")] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert len(load_gsm8k(str(first), "main", "train")) == 3


def test_loading_errors_are_clear(tmp_path):
    with pytest.raises(GrpoError, match="cannot be loaded"):
        load_hub_dataset("openai/gsm8k", "main", "train")  # offline: the hub is never reached in tests
    with pytest.raises(GrpoError, match="cannot be loaded"):
        load_hub_dataset(str(tmp_path / "missing"), "", "train")
    bad = write_local_dataset(
        tmp_path / "bad", {"train": [{"prompt": "x", "completion": "y"}]}, config="main"
    )
    with pytest.raises(DataError, match="not in the GSM8K schema"):
        load_gsm8k(str(bad), "main", "train")
    nohash = write_local_dataset(
        tmp_path / "nohash", {"train": [{"question": "x", "answer": "72"}]}, config="main"
    )
    with pytest.raises(DataError, match="no item whose answer ends in"):
        load_gsm8k(str(nohash), "main", "train")
    wrong = write_local_dataset(tmp_path / "wrong", {"test": [{"q": "x"}]})
    with pytest.raises(DataError, match="lacks column"):
        load_benchmark("svamp", path=str(wrong))
    with pytest.raises(ParameterError, match="`name` must be one of"):
        load_benchmark("mmlu")
    with pytest.raises(ParameterError, match="`splits`"):
        write_local_dataset(tmp_path / "empty", {"train": []})


def test_reference_values():
    assert reference_value("9 (apples)", "number_unit") == 9.0
    assert reference_value(36.0, "number") == 36.0
    assert reference_value("1,234", "number") == 1234.0
    assert reference_value("None", "number") is None
    assert reference_value("#### 5", "gsm8k") == 5.0 and reference_value("5", "gsm8k") is None
    assert reference_value(r" \frac{1}{2} ", "math") == r"\frac{1}{2}"
    with pytest.raises(ParameterError):
        reference_value("1", "text")


def _tiny_pretrained(folder):
    """A tiny causal LM with a printable-ASCII character tokenizer, saved like a hub model."""
    from grpo_core.llm.model import TinyModelSpec, build_tiny_model
    from grpo_core.llm.tasks import build_char_tokenizer

    alphabet = "".join(dict.fromkeys(string.printable.replace("\x0b", "").replace("\x0c", "")))
    tok = build_char_tokenizer(alphabet)
    model = build_tiny_model(
        tok,
        TinyModelSpec(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, max_positions=512),
        seed=0,
    )
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_pretrained_loader_on_a_local_model(tmp_path):
    from grpo_core.llm.model import load_pretrained

    folder = _tiny_pretrained(tmp_path / "tiny-model")
    model, tok = load_pretrained(str(folder), dtype="float32")
    assert tok.padding_side == "left" and tok.pad_token is not None
    assert model.config.vocab_size == len(tok)
    with pytest.raises(GrpoError, match="cannot be loaded"):
        load_pretrained(str(tmp_path / "nothing"))
    with pytest.raises(ParameterError, match="`dtype`"):
        load_pretrained(str(folder), dtype="int8")


@pytest.mark.slow
def test_gsm8k_preset_runs_end_to_end_on_local_data(tmp_path):
    """The GPU preset's code path (from_pretrained, GSM8K loading, correctness + format rewards, the
    benchmark suite) on the CPU with a tiny local model and local data: two GRPO steps."""
    import json

    from grpo_core.llm.config import make_config
    from grpo_core.llm.experiment import run_experiment

    model_dir = _tiny_pretrained(tmp_path / "model")
    data = write_local_dataset(tmp_path / "gsm8k", {"train": GSM8K_ROWS * 4}, config="main")
    bench = tmp_path / "benchmarks"
    for name in ("gsm8k", "svamp", "math500"):
        schema = SCHEMAS[name]
        write_local_dataset(
            bench / name, {BENCHMARKS[name].split: schema["rows"]}, config=schema.get("config", "")
        )
    cfg = make_config(
        "gsm8k-qwen2.5-0.5b",
        model=str(model_dir),
        dataset=str(data),
        device="cpu",
        requires_gpu=False,
        bf16=False,
        gradient_checkpointing=False,
        max_steps=2,
        max_completion_length=8,
        num_prompts=2,
        group_size=2,
        gradient_accumulation_steps=1,  # the preset's 16 would not divide the 4 completions
        eval_every=1,
        eval_samples=2,
        eval_suite=["gsm8k", "svamp", "math500"],
        benchmark_dir=str(bench),
        format_reward=0.5,
        beta=0.04,
        save_every=1,
        num_threads=1,
        output_dir=str(tmp_path / "run"),
        diagnose_every=0,
    )
    summary = run_experiment(cfg)
    assert summary["steps"] == 2
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in lines if r["split"] == "train"]
    assert [r["step"] for r in train] == [1, 2]
    assert {"reward/correctness", "reward/format", "kl", "frac_reward_zero_std"} <= set(train[0])
    assert sum(r["split"] == "eval" for r in lines) == 2  # eval_every=1
    evals = json.loads((tmp_path / "run" / "evals.json").read_text())
    assert set(evals["start"]) == set(evals["end"]) == {"gsm8k", "svamp", "math500"}
    assert evals["start"]["gsm8k"]["n"] == 2
    assert not (tmp_path / "run" / "checkpoints").exists()  # weights removed at the end
