"""The validation helpers and the error type: messages a user can read."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_core import laws
from grpo_core.errors import DataError, GrpoError, ParameterError
from grpo_core.validation import check_broadcast, check_choice


def test_numpy_scalars_are_shown_as_plain_numbers_in_messages():
    err = ParameterError("t", f"`t` must be >= 0; got {np.float64(-199.0)!r} and {np.int64(3)!r}")
    assert str(err) == "`t` must be >= 0; got -199.0 and 3"
    assert err.parameter == "t"
    assert str(DataError(f"constant at {np.float32(0.5)!r}")) == "constant at 0.5"
    # the message of a real check, which quotes a numpy scalar
    with pytest.raises(ParameterError) as info:
        laws.fit_law(np.arange(10.0) - 5.0, np.arange(10.0), "logistic")
    assert "np.float64" not in str(info.value) and "-5.0" in str(info.value)


def test_check_choice_refuses_an_array_with_a_parameter_error():
    # an array where a name is expected (e.g. arguments in the wrong order) must not raise
    # numpy's "truth value of an array is ambiguous"
    with pytest.raises(ParameterError, match="`law` must be one of"):
        check_choice("law", np.arange(3.0), ("logistic", "exponential"))
    with pytest.raises(ParameterError, match="`law` must be one of"):
        check_choice("law", np.array(["logistic"]), ("logistic", "exponential"))
    with pytest.raises(ParameterError, match="`law` must be one of"):
        check_choice("law", ["logistic"], ("logistic", "exponential"))  # unhashable list
    with pytest.raises(GrpoError, match="`law` must be one of"):
        laws.fit_law(np.arange(1.0, 11.0), np.arange(10.0), np.arange(10.0))
    assert check_choice("law", "logistic", ("logistic", "exponential")) == "logistic"


def test_check_broadcast_names_the_arrays_and_their_shapes():
    x, y = check_broadcast(x=np.zeros((2, 1)), y=np.arange(3.0))
    assert x.shape == y.shape == (2, 3) and y[1].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ParameterError) as err:
        check_broadcast(mu=np.zeros(2), k_ref=np.ones(3), a=np.zeros(()))
    assert err.value.parameter == "mu"
    assert str(err.value) == "`mu`, `k_ref` and `a` must broadcast together; got shapes (2,), (3,), ()"
