// NumPy .npy files (format versions 1.0-3.0, little-endian, C order) for
// tensors in and out of the CLI. bf16 has no NumPy dtype and is written as f32.
#pragma once

#include <string>
#include <string_view>

#include "dlas/core/file.h"  // write_file_atomic, read_file (once declared here)
#include "dlas/core/tensor.h"

namespace dlas {

// Throws kInvalidInput naming the file for missing, truncated or malformed files
// and kUnsupported for dtypes dlas lacks (f64 is converted to f32, bool to u8).
Tensor read_npy(const std::string& path);
Tensor parse_npy(std::string_view bytes, const std::string& source_name);
// Writes atomically (temporary file + rename).
void write_npy(const std::string& path, const Tensor& tensor);
std::string serialize_npy(const Tensor& tensor);

}  // namespace dlas
