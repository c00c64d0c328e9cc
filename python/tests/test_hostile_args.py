"""Hostile arguments to every public entry point: each bad call raises
exactly flashc.FlashcError (a ValueError) for a bad value, or exactly
flashc.FlashcTypeError (a FlashcError and a TypeError) for a value of the
wrong type, with a message naming the argument. No AttributeError,
OverflowError, RuntimeError, IndexError, KeyError or pybind11 TypeError
leaves the package."""

import ctypes
import decimal
import os
import re

import numpy as np
import pytest

import flashc

E = flashc.FlashcError
T = flashc.FlashcTypeError


def test_error_classes():
    assert issubclass(E, ValueError)
    assert issubclass(T, E) and issubclass(T, TypeError)
    assert "FlashcTypeError" in flashc.__all__ and "FlashcError" in flashc.__all__
    assert flashc.FlashcTypeError is flashc._runtime.FlashcTypeError  # pylint: disable=protected-access


class Env:
    """The valid objects the bad calls start from."""

    def __init__(self, tmp):
        rng = np.random.default_rng(0)
        self.q, self.k, self.v = (
            rng.standard_normal((1, 2, 4, 16)).astype(np.float32)
            for _ in range(3))
        self.spec = flashc.AttentionSpec(heads=2, seq_q=4, seq_kv=4,
                                         head_dim=16)
        self.kernel = flashc.compile(self.spec, "cpu")
        self.tmp = tmp
        self.file = os.path.join(tmp, "a-file")
        with open(self.file, "w", encoding="utf-8") as f:
            f.write("not a directory")
        self.bundle = None

    def h16(self):
        """f16 inputs for the bundle: [1, 2, 4, 64]."""
        rng = np.random.default_rng(1)
        return [rng.standard_normal((1, 2, 4, 64)).astype(np.float16)
                for _ in range(3)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("hostile"))
    e = Env(tmp)
    # A bundle with one sm_80 kernel, through the kernel cache.
    cache = os.path.join(tmp, "bundle")
    flashc.set_cache_directory(cache)
    try:
        flashc.compile(flashc.AttentionSpec(heads=2, seq_q=32, seq_kv=32,
                                            head_dim=64, dtype="f16"),
                       "sm_80")
    finally:
        flashc.set_cache_directory(None)
    e.bundle = flashc.load_bundle(cache)
    return e


# Values of the wrong type for each kind of argument.
NOT_TENSORS = [None, "x", 1.0, True, 3, [[1.0]], {}, object(), b"x",
               np.float32(1.0)]
NOT_BOOLS = [None, "yes", 1, 0.0, [True]]
NOT_INTS = ["1", 1.5, None, True, [1], np.float32(2.0)]
NOT_STRINGS = [None, 1, b"cpu", ["cpu"], 1.5, True]
NOT_SCALES = ["big", [], b"1", True, 1 + 1j, decimal.Decimal(1), {}]
BAD_SCALES = [float("nan"), float("inf"), -float("inf"), -1.0, 0, 0.0,
              10**400, np.float64("nan"), 1e300, 1e-300]
NOT_PATHS = [None, 1, 1.5, [], {}, True, object()]


class BadPathLike:  # pylint: disable=too-few-public-methods
    def __fspath__(self):
        return 42


def cases():
    """(id, call(env), exception class, regex the message must match)."""
    out = []

    def add(name, call, cls, pattern):
        out.append(pytest.param(call, cls, pattern, id=name))

    # flashc.attention: tensors of the wrong type.
    for i, bad in enumerate(NOT_TENSORS):
        add(f"attention-q-{i}", lambda e, b=bad: flashc.attention(b, e.k, e.v),
            T, r"^q must be a numpy array")
        add(f"attention-k-{i}", lambda e, b=bad: flashc.attention(e.q, b, e.v),
            T, r"^k must be a numpy array")
        add(f"attention-v-{i}", lambda e, b=bad: flashc.attention(e.q, e.k, b),
            T, r"^v must be a numpy array")
        if bad is not None:
            add(f"attention-out-{i}",
                lambda e, b=bad: flashc.attention(e.q, e.k, e.v, out=b),
                T, r"^out must be a numpy array")
            add(f"attention-lse-{i}",
                lambda e, b=bad: flashc.attention(e.q, e.k, e.v, lse=b),
                T, r"^lse must be a numpy array")
            add(f"kernel-q-{i}", lambda e, b=bad: e.kernel(b, e.k, e.v),
                T, r"^q must be a numpy array")
            add(f"kernel-out-{i}", lambda e, b=bad: e.kernel(e.q, e.k, e.v,
                                                              out=b),
                T, r"^out must be a numpy array")
            add(f"bundle-v-{i}", lambda e, b=bad: e.bundle.attention(
                *e.h16()[:2], b, simulate=True), T, r"^v must be a numpy")

    # flashc.attention: arrays of the wrong dtype, rank or layout.
    def array_case(name, make, pattern, cls=E):
        add(f"attention-array-{name}",
            lambda e: flashc.attention(make(e.q), e.k, e.v), cls, pattern)

    array_case("0d", lambda q: np.array(1.0, np.float32), r"^q has rank 0")
    array_case("rank3", lambda q: q[0], r"^q has rank 3")
    array_case("rank5", lambda q: q[None], r"^q has rank 5")
    array_case("rank1", lambda q: q.reshape(-1), r"^q has rank 1")
    for dtype in (np.float64, np.int32, np.bool_, np.complex64, object,
                  np.uint8):
        array_case(f"dtype-{np.dtype(dtype).name}",
                   lambda q, d=dtype: q.astype(d), r"^q: unsupported dtype")
    array_case("big-endian", lambda q: q.astype(">f4"),
               r"^q is not in the machine's byte order")
    array_case("strided-last", lambda q: np.repeat(q, 2, -1)[..., ::2],
               r"^q is not contiguous in its last dimension")
    array_case("empty", lambda q: q[:, :, :0], r"^q is empty")
    array_case("negative-stride", lambda q: q[:, :, ::-1],
               r"^q has a negative stride")
    array_case("misaligned",
               lambda q: np.frombuffer(b"\0" + q.tobytes(), np.float32,
                                       q.size, 1).reshape(q.shape),
               r"^q is not aligned")
    array_case("odd-strides",
               lambda q: np.lib.stride_tricks.as_strided(
                   q, q.shape, (512, 256, 66, 4)), r"^q has strides")
    array_case("f16-with-f32", lambda q: q.astype(np.float16),
               r"q, k and v have different dtypes")
    add("attention-k-rank3", lambda e: flashc.attention(e.q, e.k[0], e.v), E,
        r"^k has rank 3")
    add("attention-v-f64", lambda e: flashc.attention(
        e.q, e.k, e.v.astype(np.float64)), E, r"^v: unsupported dtype")
    add("attention-out-shape", lambda e: flashc.attention(
        e.q, e.k, e.v, out=np.empty((1, 2, 4, 8), np.float32)), E,
        r"^output has shape")
    add("attention-out-0d", lambda e: flashc.attention(
        e.q, e.k, e.v, out=np.empty((), np.float32)), E, r"^output must have")
    add("attention-out-f16", lambda e: flashc.attention(
        e.q, e.k, e.v, out=np.empty((1, 2, 4, 16), np.float16)), E,
        r"^output has element type f16")
    add("attention-out-f64", lambda e: flashc.attention(
        e.q, e.k, e.v, out=np.empty((1, 2, 4, 16))), E,
        r"^out: unsupported dtype")
    add("attention-out-read-only", lambda e: flashc.attention(
        e.q, e.k, e.v, out=np.broadcast_to(np.float32(0), (1, 1, 1, 1))), E,
        r"^out is read-only")
    add("attention-lse-shape", lambda e: flashc.attention(
        e.q, e.k, e.v, lse=np.empty((1, 2, 5), np.float32)), E,
        r"^lse has shape")
    add("attention-lse-f16", lambda e: flashc.attention(
        e.q, e.k, e.v, lse=np.empty((1, 2, 4), np.float16)), E,
        r"^lse has element type f16")
    add("attention-huge-broadcast", lambda e: flashc.attention(
        np.broadcast_to(e.q[:, :, :1], (1, 2, 2**50, 16)), e.k, e.v), E,
        r"^cannot allocate out")

    # Tensors whose protocols misbehave.
    for name, cls in HOSTILE_TENSORS.items():
        add(f"attention-protocol-{name}",
            lambda e, c=cls: flashc.attention(c(e.q), c(e.k), c(e.v)), E,
            r"^q[: ]")

    # Booleans.
    for i, bad in enumerate(NOT_BOOLS):
        add(f"attention-causal-{i}", lambda e, b=bad: flashc.attention(
            e.q, e.k, e.v, causal=b), T, r"^causal must be a bool")
        add(f"attention-return_lse-{i}", lambda e, b=bad: flashc.attention(
            e.q, e.k, e.v, return_lse=b), T, r"^return_lse must be a bool")
        add(f"kernel-return_lse-{i}", lambda e, b=bad: e.kernel(
            e.q, e.k, e.v, return_lse=b), T, r"^return_lse must be a bool")
        add(f"spec-causal-{i}", lambda e, b=bad: flashc.AttentionSpec(
            causal=b), T, r"^causal must be a bool")
        add(f"spec-with_lse-{i}", lambda e, b=bad: flashc.AttentionSpec(
            with_lse=b), T, r"^with_lse must be a bool")
        add(f"compile-assemble-{i}", lambda e, b=bad: flashc.compile(
            e.spec, "cpu", assemble=b), T, r"^assemble must be a bool")
        add(f"bundle-simulate-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), simulate=b), T, r"^simulate must be a bool")
        add(f"bundle-causal-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), causal=b, simulate=True), T, r"^causal must be a bool")

    # Scales.
    for i, bad in enumerate(NOT_SCALES):
        add(f"attention-scale-type-{i}", lambda e, b=bad: flashc.attention(
            e.q, e.k, e.v, scale=b), T, r"^scale must be a number")
        add(f"spec-scale-type-{i}", lambda e, b=bad: flashc.AttentionSpec(
            scale=b), T, r"^scale must be a number")
    for i, bad in enumerate(BAD_SCALES):
        add(f"attention-scale-value-{i}", lambda e, b=bad: flashc.attention(
            e.q, e.k, e.v, scale=b), E, r"^scale ")
        add(f"bundle-scale-value-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), scale=b, simulate=True), E, r"^scale ")

    # Integers of AttentionSpec.
    for field in ("batch", "heads", "kv_heads", "seq_q", "seq_kv",
                  "head_dim", "head_dim_v"):
        for i, bad in enumerate(NOT_INTS):
            if field == "kv_heads" and bad is None:
                continue  # None means heads
            add(f"spec-{field}-type-{i}",
                lambda e, f=field, b=bad: flashc.AttentionSpec(**{f: b}), T,
                rf"^{field} must be an integer")
        for i, bad in enumerate((2**70, -2**70)):
            add(f"spec-{field}-huge-{i}",
                lambda e, f=field, b=bad: flashc.AttentionSpec(**{f: b}), E,
                rf"^{field} -?\d+ does not fit 64 bits")
        add(f"spec-{field}-set",
            lambda e, f=field: setattr(flashc.AttentionSpec(), f, "x"), T,
            rf"^{field} must be an integer")
    for field, pattern in (("batch", "batch"), ("heads", "heads"),
                           ("head_dim", "head-dim"),
                           ("head_dim_v", "head-dim-v")):
        add(f"spec-{field}-negative", lambda e, f=field: flashc.compile(
            flashc.AttentionSpec(**{f: -1}), "cpu"), E,
            rf"^{pattern} must be positive")
    add("spec-seq_q-too-large", lambda e: flashc.compile(
        flashc.AttentionSpec(seq_q=2**62), "cpu"), E, r"seq-q 4611686018427387904")
    for i, bad in enumerate([None, 5, 1.5, [], b"f16"]):
        add(f"spec-dtype-type-{i}", lambda e, b=bad: flashc.AttentionSpec(
            dtype=b), T, r"^dtype must be")
    for i, bad in enumerate(["f64", "float64", np.float64, "notadtype",
                             np.dtype("int8")]):
        add(f"spec-dtype-value-{i}", lambda e, b=bad: flashc.AttentionSpec(
            dtype=b), E, r"^dtype")

    # Targets.
    for i, bad in enumerate(NOT_STRINGS):
        add(f"compile-target-type-{i}", lambda e, b=bad: flashc.compile(
            e.spec, b), T, r"^target must be a string")
        add(f"cost-target-type-{i}", lambda e, b=bad: flashc.cost(
            e.spec, target=b), T, r"^target must be a string")
        if bad is not None:
            add(f"attention-target-type-{i}", lambda e, b=bad:
                flashc.attention(e.q, e.k, e.v, target=b), T,
                r"^target must be a string")
    for i, bad in enumerate(["tpu", "", "cpu-sim", "-sim", "sm_70-sim",
                             "cpu\0", "sm_80"]):
        add(f"attention-target-value-{i}", lambda e, b=bad: flashc.attention(
            e.q, e.k, e.v, target=b), E, r"target ")
    for i, bad in enumerate(["tpu", "", "cpu-sim", "cpu\0x"]):
        add(f"compile-target-value-{i}", lambda e, b=bad: flashc.compile(
            e.spec, b), E, r"target ")
    add("cost-target-value", lambda e: flashc.cost(e.spec, target="tpu"), E,
        r"unknown target 'tpu'")

    # compile's options.
    add("compile-spec-dict", lambda e: flashc.compile({"heads": 2}), T,
        r"^spec must be a flashc.AttentionSpec, got dict")
    add("compile-spec-none", lambda e: flashc.compile(None), T,
        r"^spec must be a flashc.AttentionSpec, got None")
    add("compile-option-unknown", lambda e: flashc.compile(e.spec, tile=3),
        E, r"^unknown compile option 'tile'")
    for option, negative in (("block_q", r"^block-q must be non-negative"),
                             ("block_kv", None),
                             ("sram_bytes", r"^sram-bytes must be non-"),
                             ("splits", r"^splits must be non-negative"),
                             ("num_threads", None), ("vector_lanes", None)):
        for i, bad in enumerate(NOT_INTS):
            add(f"compile-{option}-type-{i}", lambda e, o=option, b=bad:
                flashc.compile(e.spec, **{o: b}), T,
                rf"^{option} must be an integer")
        add(f"compile-{option}-huge", lambda e, o=option: flashc.compile(
            e.spec, **{o: 2**70}), E, rf"^{option} \d+ does not fit 64 bits")
        if negative:
            add(f"compile-{option}-negative", lambda e, o=option:
                flashc.compile(e.spec, **{o: -1}), E, negative)
    add("compile-num_threads-too-many", lambda e: flashc.compile(
        e.spec, num_threads=10**6), E, r"^num-threads must be from 0 to 256")
    add("compile-vector_lanes-3", lambda e: flashc.compile(
        e.spec, vector_lanes=3), E, r"^vector-lanes must be")
    for i, bad in enumerate([1, None, b"fa2"]):
        add(f"compile-loop_order-type-{i}", lambda e, b=bad: flashc.compile(
            e.spec, loop_order=b), T, r"^loop_order must be a string")
        add(f"cost-loop_order-type-{i}", lambda e, b=bad: flashc.cost(
            e.spec, loop_order=b), T, r"^loop_order must be a string")
    add("compile-loop_order-value", lambda e: flashc.compile(
        e.spec, loop_order="bogus"), E, r"^unknown loop order 'bogus'")
    add("cost-loop_order-value", lambda e: flashc.cost(
        e.spec, loop_order="bogus"), E, r"^unknown loop order 'bogus'")

    # cost.
    add("cost-spec", lambda e: flashc.cost("spec"), T,
        r"^spec must be a flashc.AttentionSpec, got str")
    for i, bad in enumerate(["1", 1.5, True, [1]]):
        add(f"cost-sram_bytes-type-{i}", lambda e, b=bad: flashc.cost(
            e.spec, sram_bytes=b), T, r"^sram_bytes must be an integer")
    add("cost-sram_bytes-huge", lambda e: flashc.cost(
        e.spec, sram_bytes=2**70), E, r"^sram_bytes \d+ does not fit")
    add("cost-sram_bytes-negative", lambda e: flashc.cost(
        e.spec, sram_bytes=-1), E, r"^sram_bytes must be positive")
    add("cost-invalid-spec", lambda e: flashc.cost(
        flashc.AttentionSpec(heads=3, kv_heads=2)), E, r"multiple")

    # Kernel.
    for i, bad in enumerate([None, 1, b"tiled", ["tiled"]]):
        add(f"kernel-ir-type-{i}", lambda e, b=bad: e.kernel.ir(b), T,
            r"^stage must be a string")
    add("kernel-ir-value", lambda e: e.kernel.ir("nope"), E,
        r"^no IR for stage 'nope'")
    add("kernel-ir-nul", lambda e: e.kernel.ir("tiled\0"), E,
        r"^no IR for stage")
    for i, bad in enumerate(NOT_INTS):
        add(f"kernel-splits-type-{i}", lambda e, b=bad: e.kernel(
            e.q, e.k, e.v, splits=b), T, r"^splits must be an integer")
        add(f"bundle-splits-type-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), simulate=True, splits=b), T,
            r"^splits must be an integer")
    add("kernel-splits-negative", lambda e: e.kernel(e.q, e.k, e.v,
                                                     splits=-1), E,
        r"^splits must be at least 0")
    add("kernel-splits-huge", lambda e: e.kernel(e.q, e.k, e.v,
                                                 splits=2**70), E,
        r"^splits \d+ does not fit 64 bits")
    for i, bad in enumerate(["0", 1.5, [], True]):
        add(f"kernel-stream-type-{i}", lambda e, b=bad: e.kernel(
            e.q, e.k, e.v, stream=b), T, r"^stream must be an integer")
        add(f"bundle-stream-type-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), simulate=True, stream=b), T,
            r"^stream must be an integer")
    for i, bad in enumerate([-1, 2**64, 2**70]):
        add(f"kernel-stream-value-{i}", lambda e, b=bad: e.kernel(
            e.q, e.k, e.v, stream=b), E, r"^stream -?\d+ is not a stream")
    add("kernel-stream-on-cpu", lambda e: e.kernel(e.q, e.k, e.v, stream=7),
        E, r"stream")
    add("kernel-without-lse", lambda e: e.kernel(e.q, e.k, e.v,
                                                 return_lse=True), E,
        r"log-sum-exp")

    # Bundle.attention.
    for i, bad in enumerate([1, b"sm_80", ["sm_80"]]):
        add(f"bundle-chip-type-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), simulate=True, chip=b), T, r"^chip must be a string")
    for i, bad in enumerate(["sm_99", "", "cpu", "sm_80\0"]):
        add(f"bundle-chip-value-{i}", lambda e, b=bad: e.bundle.attention(
            *e.h16(), simulate=True, chip=b), E, r"^unknown chip")
    add("bundle-numpy-without-simulate", lambda e: e.bundle.attention(
        *e.h16()), E, r"simulate=True")
    add("bundle-no-variant", lambda e: e.bundle.attention(
        *e.h16(), causal=True, simulate=True), E, r"has no kernel for sm_80")
    add("bundle-splits-negative", lambda e: e.bundle.attention(
        *e.h16(), simulate=True, splits=-2), E, r"^splits must be at least 0")

    # Paths.
    for i, bad in enumerate(NOT_PATHS + [BadPathLike()]):
        if bad is not None:
            add(f"set_cache_directory-type-{i}",
                lambda e, b=bad: flashc.set_cache_directory(b), T, r"^path")
        add(f"load_bundle-type-{i}", lambda e, b=bad: flashc.load_bundle(b),
            T, r"^path")
    for i, bad in enumerate(["a\0b", b"a\0b"]):
        add(f"set_cache_directory-nul-{i}",
            lambda e, b=bad: flashc.set_cache_directory(b), E,
            r"^path .* contains a NUL")
        add(f"load_bundle-nul-{i}", lambda e, b=bad: flashc.load_bundle(b),
            E, r"^path .* contains a NUL")
    add("set_cache_directory-file", lambda e: flashc.set_cache_directory(
        e.file), E, r"^path '.*a-file' is not a directory")
    add("load_bundle-empty", lambda e: flashc.load_bundle(""), E,
        r"^path is empty")
    add("load_bundle-file", lambda e: flashc.load_bundle(e.file), E,
        r"a-file/manifest.json': Not a directory")
    add("load_bundle-missing", lambda e: flashc.load_bundle(
        os.path.join(e.tmp, "missing")), E,
        r"cannot read '.*missing/manifest.json': No such file")
    add("load_bundle-missing-bytes", lambda e: flashc.load_bundle(
        os.fsencode(os.path.join(e.tmp, "missing"))), E,
        r"cannot read '.*missing/manifest.json': No such file")
    add("load_bundle-dev-null", lambda e: flashc.load_bundle("/dev/null"), E,
        r"'/dev/null/manifest.json': Not a directory")
    add("load_bundle-too-long", lambda e: flashc.load_bundle("x" * 5000), E,
        r"cannot read 'xxx")
    # The classes in __all__, made by hand.
    add("Kernel-by-hand", lambda e: flashc.Kernel(None, e.spec, "cpu",
                                                  False), T,
        r"^native must be a compiled kernel, got None")
    add("Kernel-spec-by-hand", lambda e: flashc.Kernel(
        e.kernel._native, "spec", "cpu", False),  # pylint: disable=protected-access
        T, r"^spec must be a flashc.AttentionSpec")
    add("Bundle-by-hand", lambda e: flashc.Bundle("dir", "dir"), T,
        r"^native must be a loaded bundle, got str")
    return out


class _Raising:
    def __init__(self, array):
        self.array = array


class DeviceRaises(_Raising):
    def __dlpack_device__(self):
        raise RuntimeError("no device")


class DeviceNotIntegers(_Raising):
    def __dlpack_device__(self):
        return ("cpu", "zero")


class DeviceNotATuple(_Raising):
    def __dlpack_device__(self):
        return 5


class DLPackNotACapsule(_Raising):
    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        return 5


class DLPackOtherCapsule(_Raising):
    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(self.array.ctypes.data, b"something_else", None)


class DLPackNotCallable(_Raising):
    __dlpack__ = 5

    def __dlpack_device__(self):
        return (1, 0)


class CAIPropertyRaises(_Raising):
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("the interface fails")


class CAINotADict(_Raising):
    __cuda_array_interface__ = 5


def _cai(**fields):
    class CAI(_Raising):
        @property
        def __cuda_array_interface__(self):
            d = {"shape": self.array.shape, "typestr": "<f4",
                 "data": (4096, False), "version": 3}
            d.update(fields)
            return {k: v for k, v in d.items() if v is not None}
    return CAI


HOSTILE_TENSORS = {
    "device-raises": DeviceRaises,
    "device-not-integers": DeviceNotIntegers,
    "device-not-a-tuple": DeviceNotATuple,
    "dlpack-not-a-capsule": DLPackNotACapsule,
    "dlpack-other-capsule": DLPackOtherCapsule,
    "dlpack-not-callable": DLPackNotCallable,
    "cai-property-raises": CAIPropertyRaises,
    "cai-not-a-dict": CAINotADict,
    "cai-no-typestr": _cai(typestr=None),
    "cai-no-data": _cai(data=None),
    "cai-list-typestr": _cai(typestr=["<f4"]),
    "cai-f64": _cai(typestr="<f8"),
    "cai-float-shape": _cai(shape=(1.0, 2.0, 4.0, 16.0)),
    "cai-string-shape": _cai(shape="1234"),
    "cai-huge-shape": _cai(shape=(1, 2, 2**70, 16)),
    "cai-negative-shape": _cai(shape=(1, 2, -4, 16)),
    "cai-huge-strides": _cai(strides=(2**70, 4, 4, 4)),
    "cai-float-strides": _cai(strides=(512.0, 256.0, 64.0, 4.0)),
    "cai-short-strides": _cai(strides=(4,)),
    "cai-negative-pointer": _cai(data=(-4096, False)),
    "cai-huge-pointer": _cai(data=(2**70, False)),
    "cai-float-pointer": _cai(data=(4096.5, False)),
    "cai-misaligned": _cai(data=(4098, False)),
    "cai-odd-strides": _cai(strides=(512, 256, 66, 4)),
}


@pytest.mark.parametrize("call, cls, pattern", cases())
def test_bad_call(env, call, cls, pattern):
    with pytest.raises(Exception) as info:
        call(env)
    error = info.value
    assert type(error) is cls, (
        f"{type(error).__name__} (expected {cls.__name__}): {error}")
    assert isinstance(error, ValueError)
    if cls is T:
        assert isinstance(error, TypeError)
    assert re.search(pattern, str(error)), (
        f"{str(error)!r} does not match {pattern!r}")


def test_the_table_is_large():
    assert len(cases()) >= 150


def test_spec_fields_stay_valid():
    spec = flashc.AttentionSpec(heads=4, kv_heads=2, dtype=np.float16,
                                scale=np.float32(0.5), causal=np.bool_(True),
                                batch=np.int64(3))
    assert (spec.dtype, spec.scale, spec.causal, spec.batch) == (
        "f16", 0.5, True, 3)
    assert type(spec.batch) is int and type(spec.causal) is bool
    with pytest.raises(T, match="heads must be an integer, got str 'x'"):
        spec.heads = "x"
    assert spec.heads == 4


def test_the_extension_modules_translate_their_errors(env):
    """What reaches the extension modules without the package's checks
    (a malformed spec dict or tensor description) is still a FlashcError
    or FlashcTypeError, never RuntimeError or pybind11's TypeError."""
    compiler = flashc._compiler_api()  # pylint: disable=protected-access
    runtime = flashc._runtime  # pylint: disable=protected-access
    with pytest.raises(T, match="spec must be a flashc.AttentionSpec, got "
                       "dict"):
        compiler.compile({}, "cpu", {})
    # The problem description itself, without AttentionSpec's checks.
    problem = runtime.AttentionProblem()
    with pytest.raises(T, match="heads has the wrong type"):
        problem.heads = "two"
    for name, value in (("dtype", 2), ("mask", True), ("scale", "x"),
                        ("with_lse", 1), ("layout", None)):
        with pytest.raises(T, match=f"{name} has the wrong type"):
            setattr(problem, name, value)
    with pytest.raises(E, match="unknown mask 'sliding'; expected 'none', "
                       "'causal'"):
        problem.mask = "sliding"
    with pytest.raises(T, match="block_q has the wrong type"):
        compiler.compile(env.spec, "cpu", {"block_q": "x"})
    native = env.kernel._native  # pylint: disable=protected-access
    desc = (env.q.ctypes.data, "f32", [1, 2, 4, 16], [128, 64, 16, 1], False)
    for malformed in ("q", (1, 2), (desc[0], "f32", [1, 2], [1], False),
                      (desc[0], "f32", ["a"], [1], False)):
        with pytest.raises(T, match="wrong type"):
            native.run(malformed, desc, desc, desc, None, False, 0, 0)
    with pytest.raises(E, match="unsupported dtype 'f64'"):
        native.run(desc[:1] + ("f64",) + desc[2:], desc, desc, desc, None,
                   False, 0, 0)
    with pytest.raises(E, match="unknown device kind"):
        env.bundle._native.launch(  # pylint: disable=protected-access
            0, "tpu", desc, desc, desc, desc, None, 0, 0, 0.0)
    with pytest.raises(T, match="wrong type"):
        env.bundle._native.launch(  # pylint: disable=protected-access
            0, "sim", "q", desc, desc, desc, None, 0, 0, 0.0)
    assert runtime.FlashcTypeError is T


# Outputs that overlap an input (or each other) are refused before anything
# runs: the kernels read inputs after writing outputs, so an overlap gives
# wrong results (out=v: errors of 0.2 to 0.4 once Nq > 64).


def _qkv(rng, n=8, d=16, dtype=np.float32):
    return [rng.standard_normal((1, 2, n, d)).astype(dtype) for _ in range(3)]


@pytest.mark.parametrize("n", [8, 128])
def test_outputs_overlapping_inputs_cpu(rng, n):
    q, k, v = _qkv(rng, n)
    saved = [x.copy() for x in (q, k, v)]
    for name, out in (("q", q), ("k", k), ("v", v)):
        with pytest.raises(E, match=f"^out overlaps {name}: an output must "
                                    "not share memory with an input"):
            flashc.attention(q, k, v, out=out)
    for x, y in zip((q, k, v), saved):
        assert np.array_equal(x, y)
    # Part of k.
    buf = rng.standard_normal((1, 2, 2 * n, 16)).astype(np.float32)
    k2 = buf[:, :, :n]
    with pytest.raises(E, match="^out overlaps k"):
        flashc.attention(q, k2, v, out=buf[:, :, n // 2:n // 2 + n])
    # lse inside out, inside q, inside v.
    out = np.empty((1, 2, n, 16), np.float32)
    with pytest.raises(E, match="^lse overlaps out: the two outputs"):
        flashc.attention(q, k, v, out=out,
                         lse=out.reshape(-1)[:2 * n].reshape(1, 2, n))
    with pytest.raises(E, match="^lse overlaps q"):
        flashc.attention(q, k, v, lse=q.reshape(-1)[:2 * n].reshape(1, 2, n))
    with pytest.raises(E, match="^lse overlaps v"):
        flashc.attention(q, k, v, lse=v[..., 0])
    # Through a compiled kernel.
    kernel = flashc.compile(flashc.AttentionSpec(heads=2, head_dim=16),
                            "cpu")
    with pytest.raises(E, match="^out overlaps v"):
        kernel(q, k, v, out=v)


def test_outputs_overlapping_dlpack_inputs(rng):
    from test_cpu import DLPackOnly  # pylint: disable=import-outside-toplevel
    q, k, v = _qkv(rng)
    with pytest.raises(E, match="^out overlaps v"):
        flashc.attention(DLPackOnly(q), DLPackOnly(k), DLPackOnly(v), out=v)


def test_views_of_one_buffer(rng, seed):
    """Outputs and inputs may be views of one buffer when the byte ranges
    they span are apart; interleaved views span one range, and overlap."""
    from conftest import check  # pylint: disable=import-outside-toplevel
    q, k, _ = _qkv(rng)
    buf = rng.standard_normal((2, 1, 2, 8, 16)).astype(np.float32)
    out, v = buf[0], buf[1]  # the two halves of one buffer
    expected = v.copy()
    got = flashc.attention(q, k, v, out=out)
    assert got is out
    assert np.array_equal(v, expected)
    check(out, None, q, k, expected, False, seed)
    wide = rng.standard_normal((1, 2, 8, 32)).astype(np.float32)
    with pytest.raises(E, match="^out overlaps v"):
        flashc.attention(q, k, wide[..., 16:], out=wide[..., :16])


def test_outputs_overlapping_inputs_simulator(rng):
    q, k, v = _qkv(rng, 8, 64, np.float16)
    with pytest.raises(E, match="^out overlaps v"):
        flashc.attention(q, k, v, out=v, target="sm_80-sim")
    with pytest.raises(E, match="^out overlaps q"):
        flashc.attention(q, k, v, out=q, target="sm_80-sim")


def test_outputs_overlapping_inputs_bundle(env, rng):
    q, k, v = _qkv(rng, 20, 64, np.float16)  # prefill: the bundle's kernel
    with pytest.raises(E, match="^out overlaps k"):
        env.bundle.attention(q, k, v, out=k, simulate=True)


def _cuda(pointer, shape):
    class FakeCuda:  # pylint: disable=too-few-public-methods
        __cuda_array_interface__ = {"shape": shape, "typestr": "<f2",
                                    "data": (pointer, False), "version": 3}
    return FakeCuda()


def test_outputs_overlapping_cuda_inputs():
    """CUDA tensors: byte ranges from the data pointers and extents (the
    check comes before any launch, so no device is needed)."""
    kernel = flashc.compile(flashc.AttentionSpec(heads=2, seq_q=32,
                                                 seq_kv=32, head_dim=64,
                                                 dtype="f16"), "sm_80")
    shape = (1, 2, 8, 64)
    size = 2 * 8 * 64 * 2
    base = 1 << 20
    q, k, v = (_cuda(base + i * size, shape) for i in range(3))
    with pytest.raises(E, match="^out overlaps v"):
        kernel(q, k, v, out=_cuda(base + 2 * size, shape))
    with pytest.raises(E, match="^out overlaps k"):  # the last byte of k
        kernel(q, k, v, out=_cuda(base + 2 * size - 2, shape))
    lse_shape_bytes = 2 * 8 * 4
    out = _cuda(base + 3 * size, shape)

    class Lse:  # pylint: disable=too-few-public-methods
        __cuda_array_interface__ = {
            "shape": (1, 2, 8), "typestr": "<f4",
            "data": (base + 4 * size - lse_shape_bytes // 2, False),
            "version": 3}

    spec = flashc.AttentionSpec(heads=2, seq_q=32, seq_kv=32, head_dim=64,
                                dtype="f16", with_lse=True)
    with pytest.raises(E, match="^lse overlaps out"):
        flashc.compile(spec, "sm_80")(q, k, v, out=out, lse=Lse())


# Bundles from disk: anything that is not a bundle is a FlashcError.


def _copy_bundle(env, tmp_path, name):
    import shutil  # pylint: disable=import-outside-toplevel
    path = tmp_path / name
    shutil.copytree(env.bundle.path, path)
    return path


def test_bad_bundles(env, tmp_path):
    def refused(path, pattern):
        with pytest.raises(Exception) as info:
            flashc.load_bundle(path)
        assert type(info.value) is E, f"{type(info.value)}: {info.value}"
        assert re.search(pattern, str(info.value)), str(info.value)

    empty = tmp_path / "empty"
    empty.mkdir()
    refused(empty, r"cannot read '.*empty/manifest.json'")
    refused(os.fsencode(empty), r"cannot read '.*empty/manifest.json'")
    refused("/dev/null", r"'/dev/null/manifest.json': Not a directory")
    refused(str(empty) + "\0/x", r"contains a NUL")
    refused(os.fsencode(empty) + b"\0", r"contains a NUL")
    refused(os.fsencode(tmp_path) + b"/\xff\xfe", r"cannot read")
    manifest_dir = tmp_path / "manifest-dir"
    (manifest_dir / "manifest.json").mkdir(parents=True)
    refused(manifest_dir, r"manifest.json' is not a regular file")
    zero = tmp_path / "zero"
    zero.mkdir()
    os.symlink("/dev/zero", zero / "manifest.json")
    refused(zero, r"manifest.json' is not a regular file")

    def with_manifest(name, text):
        path = _copy_bundle(env, tmp_path, name)
        (path / "manifest.json").write_bytes(text)
        return path

    for i, text in enumerate([b"", b"{", b"[]", b"null", b"\xff\xfe\x00",
                              b'{"format": "x"}',
                              b'{"format": "flashc-bundle-1"}',
                              b'{"format": "flashc-bundle-1", "variants": 1}',
                              b'{"format": "flashc-bundle-1", "variants": [1]}',
                              b'{"format": "flashc-bundle-1", "variants": [{}]}',
                              b"[" * 100000 + b"]" * 100000]):
        refused(with_manifest(f"manifest-{i}", text), r"manifest.json")

    ptx = [p for p in os.listdir(env.bundle.path) if p.endswith(".ptx")]
    assert len(ptx) == 1
    path = _copy_bundle(env, tmp_path, "no-ptx")
    os.remove(path / ptx[0])
    refused(path, r"cannot read '.*\.ptx'")
    path = _copy_bundle(env, tmp_path, "ptx-dir")
    os.remove(path / ptx[0])
    (path / ptx[0]).mkdir()
    refused(path, r"\.ptx' is not a regular file")
    path = _copy_bundle(env, tmp_path, "ptx-zero")
    os.remove(path / ptx[0])
    os.symlink("/dev/zero", path / ptx[0])
    refused(path, r"\.ptx' is not a regular file")
    path = _copy_bundle(env, tmp_path, "ptx-changed")
    with open(path / ptx[0], "a", encoding="utf-8") as f:
        f.write("// changed\n")
    refused(path, r"does not match its manifest entry")


def test_mutated_manifests(env, tmp_path, seed):
    """Seeded mutations of a good manifest: each loads, or raises
    FlashcError; what loads runs in the simulator or raises FlashcError."""
    import random  # pylint: disable=import-outside-toplevel
    rand = random.Random(seed)
    good = (_copy_bundle(env, tmp_path, "good") / "manifest.json").read_bytes()
    numbers = [m.span() for m in re.finditer(rb"-?\d+", good)]
    strings = [m.span() for m in re.finditer(rb'"[^"]*"', good)]
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, 2, n, 64)).astype(np.float16)
               for n in (20, 20, 20))
    loaded = 0
    for i in range(60):
        text = bytearray(good)
        kind = rand.randrange(4)
        if kind == 0:
            del text[rand.randrange(len(text)):]
        elif kind == 1:
            text[rand.randrange(len(text))] = rand.randrange(256)
        elif kind == 2:
            a, b = rand.choice(numbers)
            text[a:b] = rand.choice([b"-1", b"0", b"1e999", b"4294967296",
                                     b"99999999999999999999", b"1.5",
                                     b"null", b'"7"'])
        else:
            a, b = rand.choice(strings)
            text[a:b] = rand.choice([b'""', b'"\\u0000"', b'"\xff"', b"1",
                                     b"[]", b"{}", b'"B * 99999999999"',
                                     b'"sm_90a"'])
        path = tmp_path / f"m{i}"
        path.mkdir()
        for name in os.listdir(env.bundle.path):
            if name != "manifest.json":
                os.symlink(os.path.join(env.bundle.path, name), path / name)
        (path / "manifest.json").write_bytes(bytes(text))
        try:
            bundle = flashc.load_bundle(path)
        except E:
            continue
        loaded += 1
        repr(bundle)
        try:
            bundle.attention(q, k, v, simulate=True)
        except E:
            pass
    assert loaded < 60, f"seed {seed}"
