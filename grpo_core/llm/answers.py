"""Reading the final answer of a math solution, and the rewards built on it.

GSM8K reference solutions end in ``#### <number>``; models write their answer in many other ways
(``\\boxed{...}``, "the answer is 13", or just a last number). :func:`extract_answer` reads the final
number with a fixed order of precedence, and the reward functions here turn it into TRL reward
functions (exact match of the extracted number, and an optional format reward).

Order of precedence (each rule is tried only when the one before found nothing):

1. the first number after the **last** ``####``;
2. the number inside the **last** ``\\boxed{...}`` (a ``\\frac{a}{b}`` there is read as a / b);
3. the first number after the last phrase "answer is" / "answer:" (case-insensitive);
4. the **last** number in the text.

Numbers may carry a sign, thousands separators (``1,080``), a currency sign (``$18.00``) and
decimals; trailing zeros and a sentence-ending period do not change the value (``1.000`` = 1,
``72.`` = 72). A hyphen is read as a minus sign only when it does not follow a digit or letter
(``5-3`` is two numbers, 5 and 3; ``-3`` is minus three). Text with no number gives ``None``.

MATH-style answers (``\\frac{14}{3}``, ``(3, \\frac{\\pi}{2})``) are compared by
:func:`math_answers_equal`: numerically when both sides read as numbers, else as normalised LaTeX
strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ParameterError

__all__ = [
    "NUMBER_PATTERN",
    "parse_number",
    "extract_answer",
    "extract_boxed",
    "gsm8k_reference",
    "answers_match",
    "completion_text",
    "normalize_math_answer",
    "math_answers_equal",
    "extract_math_answer",
    "correctness_reward",
    "format_reward",
    "has_final_answer_line",
]

#: A number as written in a solution: sign, optional currency sign, thousands separators, decimals,
#: and an exponent (``1e3``, ``2.5E-4``; taken only when nothing word-like follows it).
#: The sign is only taken when the hyphen does not follow a word character (so ``5-3`` is not ``-3``).
NUMBER_PATTERN = re.compile(
    r"(?<![\w.])(?P<sign>[-−+])?\s?[$€£¥]?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+(?![\w.]))?)"
)
_HASHES = re.compile(r"####")
_ANSWER_PHRASE = re.compile(r"answer\s*(?:is|:|=)", re.IGNORECASE)
_FRAC = re.compile(r"^\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}$")
_FINAL_LINE = re.compile(r"####\s*[-−+]?\s?[$€£¥]?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*\.?\s*$")


def parse_number(text: str) -> float | None:
    """The value of the first number in ``text``, or ``None``.

    Parameters
    ----------
    text : str
        Any text, e.g. ``"$1,080.50."``.

    Returns
    -------
    float or None
        The number's value (``-3.0``, ``1080.5``); ``None`` when ``text`` contains no number.

    Examples
    --------
    >>> parse_number("#### 1,080")
    1080.0
    >>> parse_number("-$3.50") == -3.5
    True
    >>> parse_number("none") is None
    True
    >>> parse_number("#### 1e3"), parse_number("3 eggs")
    (1000.0, 3.0)
    """
    match = NUMBER_PATTERN.search(text or "")
    return None if match is None else _value(match)


def _value(match: re.Match) -> float:
    value = float(match.group("num").replace(",", ""))
    return -value if match.group("sign") in ("-", "−") else value


def _numbers(text: str) -> list[float]:
    return [_value(m) for m in NUMBER_PATTERN.finditer(text)]


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``, braces balanced.

    Returns ``None`` when there is none or its braces never close.

    Parameters
    ----------
    text : str or None
        A completion or solution in LaTeX. ``\\boxed 5`` (a space, no braces) gives its first word
        without a trailing ``.`` or ``$``.

    Returns
    -------
    str or None
        The text between the braces (not stripped); ``None`` for ``None``/empty ``text``, no
        ``\\boxed``/``\\fbox``, or unbalanced braces.

    References
    ----------
    Hendrycks et al. (2021), "Measuring Mathematical Problem Solving With the MATH Dataset" (the
    ``\\boxed{}`` answer convention).

    Examples
    --------
    >>> extract_boxed(r"so \\boxed{\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    """
    if not text:
        return None
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        start = text.rfind("\\boxed ")
        if start < 0:
            return None
        rest = text[start + len("\\boxed "):].strip()
        return rest.split()[0].rstrip(".$") if rest else None
    i = text.index("{", start) + 1
    depth = 1
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return None


def _boxed_number(content: str) -> float | None:
    frac = _FRAC.match(content.strip().replace(" ", ""))
    if frac:
        num, den = parse_number(frac.group(1)), parse_number(frac.group(2))
        if num is not None and den not in (None, 0.0):
            return num / den
    nums = _numbers(content.replace("\\!", "").replace("{,}", ","))
    return nums[0] if nums else None


def extract_answer(text: Any) -> float | None:
    """Final numeric answer of a solution or completion, or ``None`` when there is none.

    Rules, in order of precedence (see the module docstring): the first number after the last
    ``####``; the number in the last ``\\boxed{}``; the first number after the last "answer is";
    the last number in the text.

    Parameters
    ----------
    text : str or None
        A solution or a model completion. ``None`` and the empty string give ``None``.

    Returns
    -------
    float or None
        The answer's value; ``None`` if no rule finds a number (the reward is then 0).

    Raises
    ------
    ParameterError
        If ``text`` is neither a string nor ``None`` (for chat messages use
        :func:`completion_text` first).

    References
    ----------
    Cobbe et al. (2021), "Training Verifiers to Solve Math Word Problems" (the ``####`` format).

    Examples
    --------
    >>> extract_answer("so 48 + 24 = 72 in all.\\n#### 72")
    72.0
    >>> extract_answer("It could be 12 or 13, but the answer is 13.")
    13.0
    >>> extract_answer("") is None
    True
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise ParameterError("text", f"`text` must be a string or None; got {type(text).__name__}")
    if not text.strip():
        return None
    hashes = list(_HASHES.finditer(text))
    if hashes:
        after = text[hashes[-1].end():]
        value = parse_number(after)
        if value is not None:
            return value
    boxed = extract_boxed(text)
    if boxed is not None:
        value = _boxed_number(boxed)
        if value is not None:
            return value
    phrases = list(_ANSWER_PHRASE.finditer(text))
    if phrases:
        value = parse_number(text[phrases[-1].end():])
        if value is not None:
            return value
    nums = _numbers(text)
    return nums[-1] if nums else None


def gsm8k_reference(answer: str) -> float:
    """The reference value of a GSM8K ``answer`` field (the number after ``####``).

    Parameters
    ----------
    answer : str
        A GSM8K solution ending in ``#### <number>``; the first number after the last ``####`` is
        read (:func:`parse_number`: sign, thousands separators, decimals).

    Returns
    -------
    float
        The reference answer.

    Raises
    ------
    ParameterError
        If ``answer`` is not a string, has no ``####``, or has no number after the last one.

    References
    ----------
    Cobbe et al. (2021), "Training Verifiers to Solve Math Word Problems" (the ``#### <number>``
    format).

    Examples
    --------
    >>> gsm8k_reference("Natalia sold 48/2 = <<48/2=24>>24 clips in May.\\n#### 72")
    72.0
    """
    if not isinstance(answer, str) or "####" not in answer:
        raise ParameterError(
            "answer", f"`answer` must be a GSM8K solution ending in '#### <number>'; got {answer!r:.80}"
        )
    value = parse_number(answer.rsplit("####", 1)[1])
    if value is None:
        raise ParameterError("answer", f"`answer` has no number after '####': {answer!r:.80}")
    return value


def answers_match(predicted: float | None, reference: float | None, tol: float = 1e-6) -> bool:
    """Whether two extracted answers are equal (absolute tolerance ``tol``, relative for big values).

    ``None`` never matches (an unanswered item is wrong, also when the reference is missing).

    Parameters
    ----------
    predicted, reference : float or None
        Extracted answers (anything ``float()`` accepts).
    tol : float, default 1e-6
        Absolute tolerance; the relative tolerance is fixed at 1e-9 (:func:`math.isclose`).

    Returns
    -------
    bool
        ``math.isclose(predicted, reference, rel_tol=1e-9, abs_tol=tol)``; ``False`` if either is
        ``None``.

    Raises
    ------
    TypeError, ValueError
        From ``float()`` if a value is not a number (no :class:`~grpo_core.errors.GrpoError`).

    Examples
    --------
    >>> answers_match(1080.0, 1080), answers_match(None, 3.0), answers_match(0.1 + 0.2, 0.3)
    (True, False, True)
    """
    if predicted is None or reference is None:
        return False
    return math.isclose(float(predicted), float(reference), rel_tol=1e-9, abs_tol=tol)


def completion_text(completion: Any) -> str:
    """The text of a completion as TRL passes it to reward functions.

    Plain-text prompts give strings; conversational prompts give a list of messages
    (``[{"role": "assistant", "content": ...}]``), whose contents are joined.

    Parameters
    ----------
    completion : str, dict, sequence of dict, or None
        A string (returned as is); one message (its ``content``; a list of multimodal content
        parts gives their ``text`` fields joined); a sequence of these (joined without
        separator); ``None`` gives ``""``; anything else goes through ``str()``.

    Returns
    -------
    str
        The completion's text. Never raises.

    References
    ----------
    TRL documentation, ``GRPOTrainer``, "Using a custom reward function" (the standard and
    conversational completion formats).

    Examples
    --------
    >>> completion_text([{"role": "assistant", "content": "#### 7"}])
    '#### 7'
    """
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        content = completion.get("content", "")
        if isinstance(content, list):  # multimodal content parts
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
        return str(content)
    if isinstance(completion, Sequence):
        return "".join(completion_text(m) for m in completion)
    return str(completion)


# ---------------------------------------------------------------------------------------------
# MATH-style answers
_LATEX_DROP = (r"\left", r"\right", r"\!", r"\,", r"\;", r"\:", r"\displaystyle", "$", " ", "\n")


def normalize_math_answer(answer: str) -> str:
    """Normalise a LaTeX answer for string comparison.

    Removes spacing commands, ``\\left``/``\\right``, dollar signs, ``\\text{...}`` wrappers and
    units in them, degree signs, ``\\%``, a leading ``x =``; turns ``\\dfrac``/``\\tfrac`` into
    ``\\frac`` and ``0.50`` into ``0.5``.

    Parameters
    ----------
    answer : str
        A LaTeX answer (anything else is passed through ``str()`` first).

    Returns
    -------
    str
        The normalised string (all whitespace removed, trailing ``.`` dropped; a plain decimal
        loses its trailing zeros).

    References
    ----------
    Our normalisation, in the spirit of the answer normalisation of Hendrycks et al. (2021),
    "Measuring Mathematical Problem Solving With the MATH Dataset".

    Examples
    --------
    >>> normalize_math_answer(r"\\left( 3, \\dfrac{\\pi}{2} \\right)")
    '(3,\\\\frac{\\\\pi}{2})'
    """
    s = str(answer).strip()
    s = re.sub(r"\\text\{\s*([^{}]*)\}", r"\1", s)
    s = re.sub(r"\\mbox\{\s*([^{}]*)\}", r"\1", s)
    for token in _LATEX_DROP:
        s = s.replace(token, "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("^\\circ", "").replace("^{\\circ}", "").replace("\\%", "").replace("%", "")
    s = re.sub(r"^[a-zA-Z]\s*=", "", s)
    s = s.rstrip(".")
    if re.fullmatch(r"-?\d+\.\d+", s):
        s = s.rstrip("0").rstrip(".")
    return s


def _math_value(s: str) -> float | None:
    s = normalize_math_answer(s)
    frac = re.fullmatch(r"(-?)\\frac\{(-?\d+(?:\.\d+)?)\}\{(-?\d+(?:\.\d+)?)\}", s)
    if frac:
        den = float(frac.group(3))
        if den == 0:
            return None
        value = float(frac.group(2)) / den
        return -value if frac.group(1) else value
    simple = re.fullmatch(r"(-?\d+)/(\d+)", s)
    if simple and float(simple.group(2)) != 0:
        return float(simple.group(1)) / float(simple.group(2))
    if re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", s):
        return float(s.replace(",", ""))
    return None


def math_answers_equal(predicted: str | None, reference: str) -> bool:
    """Whether a MATH-style answer equals the reference.

    Numeric when both read as numbers (plain, decimal, ``\\frac{a}{b}``, ``a/b``), else the
    normalised strings must be equal. ``None`` is never equal.

    Parameters
    ----------
    predicted : str or None
        The model's answer (e.g. from :func:`extract_math_answer`).
    reference : str
        The benchmark's answer.

    Returns
    -------
    bool
        Numeric comparison with ``rel_tol=1e-9``, ``abs_tol=1e-6`` when both sides read as
        numbers (a zero denominator does not), else equality of :func:`normalize_math_answer`.
        ``False`` when ``predicted`` is ``None``.

    Examples
    --------
    >>> math_answers_equal(r"\\dfrac{1}{2}", "0.5"), math_answers_equal("(3, \\\\pi)", r"\\left(3,\\pi\\right)")
    (True, True)
    """
    if predicted is None:
        return False
    a, b = _math_value(predicted), _math_value(reference)
    if a is not None and b is not None:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return normalize_math_answer(predicted) == normalize_math_answer(reference)


def extract_math_answer(text: str | None) -> str | None:
    """The final answer of a MATH-style completion as a string: the last ``\\boxed{}``, else the
    ``####`` / "answer is" / last-number rules of :func:`extract_answer` (as a string).

    Parameters
    ----------
    text : str or None
        A model completion.

    Returns
    -------
    str or None
        The content of the last ``\\boxed{}`` (:func:`extract_boxed`), else the number of
        :func:`extract_answer` written as an integer when it is one (``"72"``), else as
        ``repr(float)`` (``"0.5"``); ``None`` for ``None``/empty ``text`` or when nothing is
        found.

    Raises
    ------
    ParameterError
        If ``text`` is neither a string nor ``None`` (as :func:`extract_answer`).

    Examples
    --------
    >>> extract_math_answer(r"so \\boxed{\\frac{1}{2}}"), extract_math_answer("the answer is 72.")
    ('\\\\frac{1}{2}', '72')
    """
    if text is not None and not isinstance(text, str):
        raise ParameterError("text", f"`text` must be a string or None; got {type(text).__name__}")
    if not text:
        return None
    boxed = extract_boxed(text)
    if boxed is not None:
        return boxed
    value = extract_answer(text)
    if value is None:
        return None
    return str(int(value)) if float(value).is_integer() else repr(value)


# ---------------------------------------------------------------------------------------------
# TRL reward functions
def has_final_answer_line(text: str) -> bool:
    """Whether ``text`` ends with a line ``#### <number>`` (the format the prompt asks for).

    Parameters
    ----------
    text : str or None
        A completion; trailing whitespace is ignored, and so is a final ``.``.

    Returns
    -------
    bool
        ``True`` when the last ``####`` is followed by one number (optional sign, currency sign,
        thousands separators, decimals) and nothing else; ``False`` for ``None``.

    References
    ----------
    Cobbe et al. (2021), "Training Verifiers to Solve Math Word Problems" (the ``####`` format).

    Examples
    --------
    >>> has_final_answer_line("so 3 + 4 = 7.\\n#### 7"), has_final_answer_line("#### 7 apples")
    (True, False)
    """
    return bool(_FINAL_LINE.search((text or "").rstrip()))


def correctness_reward(reference_key: str = "reference") -> Callable[..., list[float]]:
    """A TRL reward function: 1 when the extracted final number equals the reference, else 0.

    Parameters
    ----------
    reference_key : str
        Name of the dataset column holding the reference value (a number, or a GSM8K solution
        string ending in ``####``); TRL passes dataset columns to reward functions by name.

    Returns
    -------
    callable
        ``f(prompts, completions, **columns) -> list[float]`` named ``correctness`` (so TRL logs
        ``rewards/correctness/mean``). Completions without a number get 0, never an exception.

    Examples
    --------
    >>> f = correctness_reward()
    >>> f(prompts=["q", "q"], completions=["#### 72", "no idea"], reference=[72, 72])
    [1.0, 0.0]
    """

    def correctness(prompts=None, completions=(), **kwargs) -> list[float]:
        refs = kwargs[reference_key]
        out = []
        for completion, ref in zip(completions, refs):
            ref_value = gsm8k_reference(ref) if isinstance(ref, str) and "####" in ref else _as_float(ref)
            out.append(1.0 if answers_match(extract_answer(completion_text(completion)), ref_value) else 0.0)
        return out

    return correctness


def _as_float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        return parse_number(value)
    return float(value)


def format_reward(weight: float = 0.5) -> Callable[..., list[float]]:
    """A TRL reward function: ``weight`` when the completion ends with a ``#### <number>`` line.

    It pays for the format only, never for being right: with it on, the training reward can rise
    while accuracy stays flat, which is what the train-eval decoupling diagnostic looks for.

    Parameters
    ----------
    weight : float, default 0.5
        Reward of a well-formatted completion (reward units), finite and > 0.

    Returns
    -------
    callable
        ``f(prompts, completions, **columns) -> list[float]`` named ``format`` (TRL logs
        ``rewards/format/mean``): ``weight`` when :func:`has_final_answer_line`, else 0.

    Raises
    ------
    ParameterError
        If ``weight`` is not a finite number > 0.

    Examples
    --------
    >>> format_reward(0.5)(completions=["...\\n#### 12", "12"])
    [0.5, 0.0]
    """
    if not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
        raise ParameterError("weight", f"`weight` must be a finite number > 0; got {weight!r}")

    def format(prompts=None, completions=(), **kwargs) -> list[float]:  # noqa: A001 - TRL logs the name
        return [weight if has_final_answer_line(completion_text(c)) else 0.0 for c in completions]

    return format
