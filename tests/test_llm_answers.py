"""Final-answer extraction and the rewards built on it (case 09 and hand-written GSM8K-style items)."""

from __future__ import annotations

import math

import pytest
from conftest import load_case

from grpo_core.errors import ParameterError
from grpo_core.llm.answers import (
    answers_match,
    completion_text,
    correctness_reward,
    extract_answer,
    extract_boxed,
    extract_math_answer,
    format_reward,
    gsm8k_reference,
    has_final_answer_line,
    math_answers_equal,
    normalize_math_answer,
    parse_number,
)

CASE = load_case("09-gsm8k-answer-extraction")


@pytest.mark.parametrize("item", CASE["input"]["items"], ids=lambda it: repr(it["text"][:30]))
def test_case_09_every_item(item):
    value = extract_answer(item["text"])
    if item["expected"] is None:
        assert value is None
    else:
        assert value is not None and math.isclose(value, item["expected"], abs_tol=1e-6)
    # the reward of the same text against its expected value: 1 when found, 0 (no exception) when not
    reward = correctness_reward("reference")(
        prompts=["q"],
        completions=[item["text"]],
        reference=[item["expected"] if item["expected"] is not None else 1.0],
    )
    assert reward == [1.0 if item["expected"] is not None else 0.0]


# Hand-written GSM8K-style items: (text, expected value or None)
OWN = [
    ("Each box holds 1,250 pens, so 4 boxes hold 5,000 pens.\n#### 5,000", 5000),
    ("The temperature fell to -12 degrees.\n#### -12", -12),
    ("She pays $3.75 per cup, 2 cups: $7.50.\n#### 7.50", 7.5),
    ("He has 10 - 3 = 7 left.", 7),                              # no ####: the last number
    ("10-3 = 7, not -3", -3),                                    # a hyphen after a space is a minus sign
    ("It costs 5-3 dollars", 3),                                 # 5-3 is two numbers: the last is 3
    ("The answer is: 42 apples, from 6 bags of 7.", 42),        # 'answer is' beats the last number
    ("So x = \\boxed{\\frac{3}{4}}", 0.75),                      # a fraction in the box
    ("\\boxed{1{,}000}", 1000),                                  # LaTeX thousands separator
    ("The total was 12.", 12),                                   # trailing sentence period
    ("#### $1,000,000.00", 1_000_000),
    ("#### 0.5 and later 7", 0.5),                               # first number after the last ####
    ("first #### 3 then #### 4", 4),                             # the LAST #### counts
    ("####", None),                                              # nothing after ####: no other number either
    ("#### none\nbut the sum is 9", 9),                          # #### without number falls through
    ("   \n\t ", None),
    (".5 of it", 0.5),
    ("−4 (unicode minus)", -4),
    ("#### 1e3", 1000),                                          # an exponent (was read as 1)
    ("Light travels 3e8 m/s, so #### 2.5E-4", 0.00025),
]


@pytest.mark.parametrize("text,expected", OWN, ids=[repr(t[:25]) for t, _ in OWN])
def test_own_items(text, expected):
    value = extract_answer(text)
    if expected is None:
        assert value is None
    else:
        assert value == pytest.approx(expected, abs=1e-9)


def test_none_and_wrong_types():
    assert extract_answer(None) is None
    with pytest.raises(ParameterError, match="`text` must be a string"):
        extract_answer(12)
    with pytest.raises(ParameterError, match="`text` must be a string"):
        extract_math_answer(12)
    assert extract_math_answer(None) is None and extract_math_answer("") is None


def test_parse_number_and_reference():
    assert parse_number("1,080.50") == 1080.5
    assert parse_number("no digits") is None
    assert gsm8k_reference("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72") == 72
    with pytest.raises(ParameterError, match="GSM8K solution"):
        gsm8k_reference("72")
    with pytest.raises(ParameterError, match="no number after"):
        gsm8k_reference("#### seventy")


def test_answers_match_tolerance_and_none():
    assert answers_match(18.0, 18) and answers_match(0.1 + 0.2, 0.3)
    assert not answers_match(18.01, 18)
    assert not answers_match(None, 18) and not answers_match(18, None)


def test_completion_text_handles_chat_messages():
    msgs = [{"role": "assistant", "content": "so #### 5"}]
    assert completion_text(msgs) == "so #### 5"
    assert completion_text(None) == ""
    assert (
        completion_text({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}) == "ab"
    )
    # the reward reads chat completions too
    assert correctness_reward()(completions=[msgs], reference=[5]) == [1.0]


def test_correctness_reward_with_gsm8k_solution_as_reference():
    f = correctness_reward("answer")
    assert f.__name__ == "correctness"
    out = f(prompts=["a", "b", "c"], completions=["#### 72", "72.0", ""],
            answer=["so\n#### 72", "#### 72", "#### 72"])
    assert out == [1.0, 1.0, 0.0]


def test_format_reward_pays_for_format_only():
    f = format_reward(0.5)
    assert f.__name__ == "format"
    assert f(completions=["wrong but formatted\n#### 3", "right: 72", "#### 1,000.", ""]) == [
        0.5,
        0.0,
        0.5,
        0.0,
    ]
    assert has_final_answer_line("x\n#### -4")
    assert not has_final_answer_line("#### 4 and more text")
    with pytest.raises(ParameterError, match="`weight`"):
        format_reward(0.0)


def test_boxed_and_math_answers():
    assert extract_boxed(r"a \boxed{x^{2}} b \boxed{\frac{1}{2}}") == r"\frac{1}{2}"
    assert extract_boxed(r"\boxed{unclosed") is None
    assert extract_boxed(r"so \boxed 5.") == "5"
    assert extract_math_answer(r"the result is \boxed{\dfrac{14}{3}}") == r"\dfrac{14}{3}"
    assert extract_math_answer("#### 12") == "12"
    assert extract_math_answer("") is None
    assert math_answers_equal(r"\frac{14}{3}", r"\dfrac{14}{3}")
    assert math_answers_equal("0.50", r"\frac{1}{2}")
    assert math_answers_equal(r"\left( 3, \frac{\pi}{2} \right)", r"(3,\frac{\pi}{2})")
    assert math_answers_equal(r"10\%", "10")
    assert math_answers_equal(r"90^\circ", "90")
    assert math_answers_equal(r"\text{(C)}", "(C)")
    assert not math_answers_equal(r"\frac{1}{3}", "0.3")
    assert not math_answers_equal(None, "1")
    assert normalize_math_answer("x = 5") == "5"
