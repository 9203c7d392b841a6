"""import asyncmlp against bad arguments: None where an object goes, shapes
that are not shapes, scalars out of range, tensors on two devices; and the
library's errors as Python's built-in classes. Each a Python exception with
one clear line, never a crash (the calls that once crashed run in a child
process, so a segfault fails the test instead of ending pytest)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import asyncmlp as am


def run_child(code, timeout=60):
    """Runs `code` in a fresh interpreter that imports the same module; (rc, stdout, stderr)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ))
    return r.returncode, r.stdout, r.stderr


# --- None where an object goes ------------------------------------------------

@pytest.mark.parametrize("call", [
    "am.SGD(None, lr=0.1).step(1)",
    "s = am.Sequential(); s.add(None); s(am.ones((2, 2)))",
    "s = am.Sequential(); s.add(am.Dense(2), object())",
    "am.SGD(am.ones((2, 2)), lr=0.1)",
])
def test_none_or_a_non_block_where_a_block_goes_is_a_type_error(call):
    rc, out, err = run_child(
        "import asyncmlp as am\n"
        "try:\n"
        f"    {call}\n"
        "except TypeError as e:\n"
        "    print('TypeError:', e)\n")
    assert rc == 0, f"{call}: exit {rc}\n{err}"
    assert out.startswith("TypeError: ") and "must be a Block" in out and out.count("\n") == 1, out


def test_a_sequential_and_sgd_still_take_blocks():
    net = am.Sequential()
    net.add(am.Dense(3, activation="relu", in_units=2), am.ReLU(), am.Dense(1, in_units=3))
    assert len(net) == 3
    trainer = am.SGD(net, lr=0.1)
    out = net(am.ones((4, 2)))
    assert out.shape == (4, 1)
    am.L2Loss()(out, am.zeros((4, 1))).backward()
    trainer.step(4)
    am.waitall()


# --- shapes: one converter, one line ------------------------------------------

@pytest.mark.parametrize("shape, cls, line", [
    ((2**63,), am.ShapeError, "ones: dimension 9223372036854775808 exceeds 9223372036854775807"),
    (2**63, am.ShapeError, "ones: dimension 9223372036854775808 exceeds"),
    ((2.5, 2), TypeError, "ones: a shape's dimensions are ints, got float 2.5"),
    ("ab", TypeError, "ones: the shape must be an int or a sequence of ints, got str 'ab'"),
    (b"ab", TypeError, "ones: the shape must be an int or a sequence of ints, got bytes"),
    (None, TypeError, "ones: the shape must be an int or a sequence of ints, got NoneType None"),
    (True, TypeError, "ones: the shape must be an int or a sequence of ints, got bool"),
    ((2, None), TypeError, "ones: a shape's dimensions are ints, got NoneType"),
    ({2: 3}, TypeError, "ones: the shape must be an int or a sequence of ints, got dict"),
    ((-1, 2), am.ShapeError, "has a negative dimension"),
    ((2**31, 2**31, 2), am.ShapeError, "has more elements than a tensor can hold"),
])
def test_a_bad_shape_is_one_line_of_the_right_class(shape, cls, line):
    with pytest.raises(cls) as e:
        am.ones(shape)
    msg = str(e.value)
    assert line in msg and "\n" not in msg and "Unable to cast" not in msg, msg


def test_every_shape_taker_uses_the_converter():
    t = am.ones(6)
    for call, op in [(lambda s: am.zeros(s), "zeros"), (lambda s: am.full(s, 1.0), "full"),
                     (lambda s: am.randn(s), "randn"), (lambda s: am.normal(0, 1, s), "normal"),
                     (lambda s: am.uniform(0, 1, s), "uniform"), (lambda s: am.reshape(t, s), "reshape"),
                     (lambda s: t.reshape(s), "reshape")]:
        with pytest.raises(TypeError, match=f"^{op}: a shape's dimensions are ints, got float 2.5$"):
            call((2.5, 2))
        with pytest.raises(am.ShapeError, match=f"^{op}: dimension 9223372036854775808 exceeds"):
            call((2**63,))
    with pytest.raises(TypeError, match="^reshape: a shape's dimensions are ints, got float"):
        t.reshape(2, 1.5)


def test_good_shapes_still_work():
    assert am.ones(3).shape == (3,)
    assert am.ones(np.int64(3)).shape == (3,)
    assert am.ones([2, np.int32(3)]).shape == (2, 3)
    assert am.ones(()).shape == () and am.ones(()).item() == 1.0
    assert am.ones((0, 4)).size == 0
    assert am.ones(6).reshape(2, 3).shape == (2, 3) and am.ones(6).reshape((3, -1)).shape == (3, 2)


# --- scalars and devices ------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: am.normal(0, -1, (2,)),
    lambda: am.normal(0, math.nan, (2,)),
    lambda: am.normal(math.inf, 1, (2,)),
    lambda: am.uniform(2, 1, (2,)),
    lambda: am.uniform(math.nan, 1, (2,)),
    lambda: am.uniform(0, math.inf, (2,)),
])
def test_a_random_op_refuses_a_bad_distribution(call):
    with pytest.raises(ValueError) as e:
        call()
    assert isinstance(e.value, am.ShapeError) and "\n" not in str(e.value)
    assert str(e.value).startswith(("normal: ", "uniform: ")), str(e.value)  # the Python call, not the library's


def test_random_ops_take_good_distributions():
    assert (am.normal(0, 0, (3,)).asnumpy() == 0).all()
    u = am.uniform(-1, 1, (1000,)).asnumpy()
    assert u.min() >= -1 and u.max() < 1
    assert (am.uniform(2, 2, (3,)).asnumpy() == 2).all()


def test_a_device_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="^device must be a Device .* got int$"):
        am.ones(2, device=5)
    with pytest.raises(am.DeviceError, match="tpu"):
        am.ones(2, device="tpu")
    assert am.ones(2, device=None).device == am.cpu()


def test_the_mixed_device_message_names_no_cpp_method():
    with pytest.raises(am.DeviceError) as e:
        am.ones((2, 2)) + am.ones((2, 2), device=am.cpu(1))
    msg = str(e.value)
    assert "cpu:0 and cpu:1" in msg and "copy_to()" not in msg, msg


# --- arrays -------------------------------------------------------------------

def test_array_refuses_what_is_not_numbers():
    with pytest.raises(TypeError, match="got None"):
        am.array(None)
    for dt in (object, [("a", "f4"), ("b", "i4")], "U3", np.complex64):
        with pytest.raises(TypeError, match="cannot read values of dtype .* as float32"):
            am.array(np.zeros(2, dtype=dt))


def test_array_takes_numbers_of_any_layout():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert am.array(a[:, ::2]).asnumpy().tolist() == a[:, ::2].tolist()  # non-contiguous
    assert am.array(np.float32(2.5)).shape == () and am.array(np.float32(2.5)).item() == 2.5  # 0-d
    assert am.array([1, 2, 3]).asnumpy().tolist() == [1, 2, 3]
    assert am.array(np.array([True, False])).asnumpy().tolist() == [1, 0]


def test_array_of_a_huge_zero_stride_view_is_a_memory_error():
    # 4 EiB of values read from one float: past any device's limit, refused before NumPy copies it.
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(2**60,), strides=(0,))
    with pytest.raises(MemoryError) as e:
        am.array(huge)
    assert isinstance(e.value, am.OutOfMemory) and "out of memory on cpu:0" in str(e.value)


# --- the errors as built-in classes --------------------------------------------

def test_the_errors_subclass_the_builtins():
    assert issubclass(am.Error, RuntimeError)
    for cls, builtin in [(am.ShapeError, ValueError), (am.OutOfMemory, MemoryError), (am.DeviceError, RuntimeError),
                         (am.EnvError, RuntimeError), (am.Dropped, RuntimeError), (am.DeviceFault, RuntimeError),
                         (am.KernelError, RuntimeError)]:
        assert issubclass(cls, am.Error) and issubclass(cls, builtin), cls
        assert cls.__module__ == "asyncmlp" and cls.__doc__, cls


def test_except_valueerror_and_memoryerror_catch_the_librarys_errors():
    try:
        am.ones((2, 3)) + am.ones((4, 5))
    except ValueError as e:
        assert type(e) is am.ShapeError and "(2, 3)" in str(e) and "(4, 5)" in str(e)
    dev = am.cpu(6)
    am.set_memory_limit(dev, 1 << 20)
    try:
        am.ones((1024, 1024), device=dev)  # 4 MiB past a limit of 1 MiB
    except MemoryError as e:
        assert type(e) is am.OutOfMemory and "past the limit of 1048576 bytes" in str(e)
    else:
        pytest.fail("no MemoryError")
    try:
        am.device("tpu")
    except RuntimeError as e:
        assert type(e) is am.DeviceError


def test_a_kernel_error_carries_its_device_and_sequence():
    dev = am.cpu(3)
    x = am.ones((4,), device=dev) * math.nan
    am.check_finite(x, "the loss")
    with pytest.raises(RuntimeError) as e:
        (x + 1).wait_to_read()
    err = e.value
    assert type(err) is am.KernelError
    assert err.device == "cpu:3" and err.op == "check_finite" and isinstance(err.sequence, int)
    assert f"(op #{err.sequence} on cpu:3)" in str(err) and "the loss" in str(err)
    am.waitall()  # reported once


# --- Python's conventions -----------------------------------------------------

def test_a_tensor_has_shape_dtype_device_and_asarray():
    t = am.full((2, 3), 1.5, device=am.cpu(1))
    assert t.shape == (2, 3) and t.dtype == np.float32 and t.device == am.cpu(1)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.shape == (2, 3) and (a == 1.5).all()
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array_equal(np.add(t, 1), np.full((2, 3), 2.5, np.float32))  # NumPy reads it through __array__


def test_dense_takes_activation_none_as_the_docs_show():
    x = am.array(np.array([[-1.0, 2.0]], np.float32))
    for dense in (am.Dense(3, activation=None, in_units=2), am.Dense(3, None, 2), am.Dense(3, in_units=2)):
        assert dense.describe() == "Dense(3)" and dense(x).shape == (1, 3)
    assert am.Dense(3, activation="relu").describe() == "Dense(3, relu)"
    with pytest.raises(am.ShapeError, match="activation must be None or 'relu'"):
        am.Dense(3, activation="tanh")
    with pytest.raises(TypeError, match="activation must be None or 'relu', got int"):
        am.Dense(3, activation=1)


def test_help_shows_the_shapes():
    assert "a (n, k) and b (k, m)" in am.dot.__doc__ and "-> (n, m)" in am.dot.__doc__
    assert "dot(a: " in am.dot.__doc__  # named arguments


def test_two_threads_on_one_device_get_one_clear_error():
    import threading
    dev = am.cpu(4)
    am.ones(2, device=dev).wait_to_read()  # this thread drives cpu:4
    caught = []

    def other():
        try:
            am.ones(2, device=dev)
        except am.Error as e:
            caught.append(str(e))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert len(caught) == 1 and caught[0].startswith("cpu:4 is driven by thread "), caught
