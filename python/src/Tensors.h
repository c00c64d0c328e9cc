//===- Tensors.h - Python tensor descriptions for the bindings --*- C++ -*-===//
//
// The Python layer (flashc/_tensors.py) turns numpy arrays, DLPack and CUDA
// array interface tensors into plain descriptions: (data pointer, dtype
// name, sizes, strides in elements, on_device). Both extension modules read
// them with these helpers, and raise flashc.FlashcError with the C++
// layer's message. No other exception leaves a binding: each module
// registers translateExceptions, which turns a failed conversion of a
// Python value into flashc.FlashcTypeError and any other C++ exception
// (std::bad_alloc included) into flashc.FlashcError.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_PYTHON_TENSORS_H
#define FLASHC_PYTHON_TENSORS_H

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace flashc_python {

/// A tensor as the Python layer describes it.
struct TensorDesc {
  uintptr_t data = 0;
  std::string dtype;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  bool onDevice = false;
};

/// Sets the Python exception `type` with `message`. The message may hold
/// bytes that are not UTF-8 (a path from a file system, a name from a
/// manifest): they become U+FFFD, never a UnicodeDecodeError in place of
/// the error.
inline void setError(PyObject *type, const std::string &message) {
  PyObject *text = PyUnicode_DecodeUTF8(
      message.data(), static_cast<Py_ssize_t>(message.size()), "replace");
  if (!text)
    return; // The decoding error (out of memory) stays set.
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

/// Raises `error` (flashc.FlashcError or flashc.FlashcTypeError) with
/// `message`.
[[noreturn]] inline void raise(const pybind11::object &error,
                               const std::string &message) {
  setError(error.ptr(), message);
  throw pybind11::error_already_set();
}

/// The name of `value`'s type, for messages.
inline std::string typeName(pybind11::handle value) {
  return pybind11::str(pybind11::type::of(value).attr("__name__"));
}

/// `value` as a T, or `typeError` (flashc.FlashcTypeError) raised with
/// "NAME has the wrong type (TYPE)".
template <typename T>
T castOrRaise(pybind11::handle value, const std::string &name,
              const pybind11::object &typeError) {
  try {
    return value.cast<T>();
  } catch (const pybind11::cast_error &) {
    raise(typeError, name + " has the wrong type (" + typeName(value) + ")");
  }
}

/// A Python str of `text`, which may hold bytes that are not UTF-8 (they
/// become U+FFFD): strings read from a bundle's manifest.
inline pybind11::str toStr(const std::string &text) {
  PyObject *s = PyUnicode_DecodeUTF8(
      text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (!s)
    throw pybind11::error_already_set();
  return pybind11::reinterpret_steal<pybind11::str>(s);
}

/// The exception types translateExceptions raises (one pair per module).
inline PyObject *&translatedError() {
  static PyObject *type = nullptr;
  return type;
}
inline PyObject *&translatedTypeError() {
  static PyObject *type = nullptr;
  return type;
}

/// Registers, for the functions of the module being defined, a translator
/// of C++ exceptions: a Python value that does not convert to the C++ type
/// asked for (pybind11::cast_error) raises `typeError`; std::bad_alloc and
/// every other C++ exception raise `error`. Python exceptions pass as they
/// are.
inline void translateExceptions(const pybind11::object &error,
                                const pybind11::object &typeError) {
  translatedError() = error.ptr();
  translatedTypeError() = typeError.ptr();
  pybind11::register_local_exception_translator([](std::exception_ptr p) {
    if (!p)
      return;
    try {
      std::rethrow_exception(p);
    } catch (const pybind11::error_already_set &) {
      throw;
    } catch (const pybind11::cast_error &e) {
      setError(translatedTypeError(),
               std::string("an argument has the wrong type: ") + e.what());
    } catch (const pybind11::builtin_exception &e) {
      setError(translatedError(), e.what());
    } catch (const std::bad_alloc &) {
      setError(translatedError(), "out of memory");
    } catch (const std::exception &e) {
      setError(translatedError(), e.what());
    } catch (...) {
      setError(translatedError(), "an unknown C++ exception");
    }
  });
}

/// Reads a (data, dtype, sizes, strides, on_device) tuple; a malformed one
/// raises pybind11::cast_error (FlashcTypeError through
/// translateExceptions).
inline TensorDesc toDesc(const pybind11::handle &h) {
  if (!pybind11::isinstance<pybind11::tuple>(h))
    throw pybind11::cast_error("a tensor description is a tuple");
  auto t = h.cast<pybind11::tuple>();
  if (t.size() != 5)
    throw pybind11::cast_error("a tensor description has 5 fields");
  TensorDesc d;
  d.data = t[0].cast<uintptr_t>();
  d.dtype = t[1].cast<std::string>();
  d.sizes = t[2].cast<std::vector<int64_t>>();
  d.strides = t[3].cast<std::vector<int64_t>>();
  d.onDevice = t[4].cast<bool>();
  if (d.sizes.size() != d.strides.size())
    throw pybind11::cast_error("a tensor description's sizes and strides "
                               "differ in rank");
  return d;
}

} // namespace flashc_python

#endif // FLASHC_PYTHON_TENSORS_H
