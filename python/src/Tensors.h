//===- Tensors.h - Python tensor descriptions for the bindings --*- C++ -*-===//
//
// The Python layer (flashc/_tensors.py) turns numpy arrays, DLPack and CUDA
// array interface tensors into plain descriptions: (data pointer, dtype
// name, sizes, strides in elements, on_device). Both extension modules read
// them with these helpers, and raise flashc.FlashcError with the C++
// layer's message.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_PYTHON_TENSORS_H
#define FLASHC_PYTHON_TENSORS_H

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
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

/// Reads a (data, dtype, sizes, strides, on_device) tuple.
inline TensorDesc toDesc(const pybind11::handle &h) {
  auto t = h.cast<pybind11::tuple>();
  if (t.size() != 5)
    throw pybind11::value_error("a tensor description has 5 fields");
  TensorDesc d;
  d.data = t[0].cast<uintptr_t>();
  d.dtype = t[1].cast<std::string>();
  d.sizes = t[2].cast<std::vector<int64_t>>();
  d.strides = t[3].cast<std::vector<int64_t>>();
  d.onDevice = t[4].cast<bool>();
  if (d.sizes.size() != d.strides.size())
    throw pybind11::value_error("sizes and strides differ in rank");
  return d;
}

/// Raises `error` (flashc.FlashcError) with `message`.
[[noreturn]] inline void raise(const pybind11::object &error,
                               const std::string &message) {
  PyErr_SetString(error.ptr(), message.c_str());
  throw pybind11::error_already_set();
}

} // namespace flashc_python

#endif // FLASHC_PYTHON_TENSORS_H
