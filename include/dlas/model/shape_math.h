// Shape arithmetic shared by the op schemas (shape inference) and the reference
// interpreter (dlas/system/reference.h), so both resolve NumPy broadcasting and ONNX Slice
// parameters the same way. Header-only; errors name the node.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dlas/core/tensor.h"
#include "dlas/model/graph.h"

namespace dlas::shape_math {

// NumPy multidirectional broadcasting of two shapes; nullopt when incompatible.
inline std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    // Align from the right; missing leading dims act as 1.
    const int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

// One axis of a resolved Slice: output element j reads input index start + j * step.
struct SliceDim {
  int64_t start = 0;
  int64_t step = 1;
  int64_t size = 0;  // output extent
};

// Resolves ONNX Slice (opset 10+) parameters against `data` for every axis of `data`.
// `axes` and `steps` may be empty (absent). Throws kInvalidInput naming the node.
inline std::vector<SliceDim> resolve_slice(const Node& node, const Shape& data,
                                           const std::vector<int64_t>& starts,
                                           const std::vector<int64_t>& ends,
                                           std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int64_t r = static_cast<int64_t>(data.size());
  auto bad = [&](auto&&... args) { fail(ErrorKind::kInvalidInput, node.label(), ": ", args...); };
  if (starts.size() != ends.size())
    bad("starts has ", starts.size(), " values but ends has ", ends.size());
  if (axes.empty() && !starts.empty()) {
    if (static_cast<int64_t>(starts.size()) > r)
      bad(starts.size(), " starts given for a rank-", r, " input");
    for (int64_t i = 0; i < static_cast<int64_t>(starts.size()); ++i) axes.push_back(i);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size())
    bad("axes has ", axes.size(), " values but starts has ", starts.size());
  if (steps.size() != starts.size())
    bad("steps has ", steps.size(), " values but starts has ", starts.size());
  std::vector<SliceDim> dims(data.size());
  for (size_t a = 0; a < data.size(); ++a) dims[a] = {0, 1, data[a]};
  std::vector<bool> seen(data.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + r : axes[i];
    if (axis < 0 || axis >= r) bad("axis ", axes[i], " is out of range for rank ", r);
    if (seen[static_cast<size_t>(axis)]) bad("axis ", axes[i], " is repeated");
    seen[static_cast<size_t>(axis)] = true;
    const int64_t step = steps[i];
    if (step == 0) bad("step for axis ", axes[i], " is 0");
    const int64_t d = data[static_cast<size_t>(axis)];
    // Adding d to a negative value cannot overflow; INT64_MIN/MAX sentinels then clamp.
    int64_t start = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + d : ends[i];
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); };
    int64_t size = 0;
    if (d == 0) {
      start = 0;
    } else if (step > 0) {
      start = clamp(start, 0, d);
      end = clamp(end, 0, d);
      if (end > start) size = (end - start - 1) / step + 1;
    } else {
      start = clamp(start, 0, d - 1);
      end = clamp(end, -1, d - 1);
      // Unsigned magnitude: -INT64_MIN does not fit in int64_t.
      const uint64_t mag = uint64_t{0} - static_cast<uint64_t>(step);
      if (start > end)
        size = static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / mag + 1);
    }
    dims[static_cast<size_t>(axis)] = {std::max<int64_t>(start, 0), step, size};
  }
  return dims;
}

// An Einsum equation ("bhid,bhjd->bhij"; spaces ignored, letters of either case): each
// operand's subscripts and the output's. Without "->" the output is the letters that occur
// once, in alphabetical order (ONNX's implicit mode). Ellipses and a letter repeated within
// one operand (a diagonal) are refused: kUnsupported naming the node; a malformed equation,
// an operand whose rank differs from its subscripts, or one letter of two sizes, kInvalidInput.
struct EinsumSpec {
  std::vector<std::string> inputs;
  std::string output;
  std::vector<std::pair<char, int64_t>> sizes;  // every letter and its size
  int64_t size_of(char c) const {
    for (const auto& [l, d] : sizes)
      if (l == c) return d;
    return 0;
  }
};

inline EinsumSpec parse_einsum(const Node& node, const std::vector<Shape>& shapes) {
  const std::string eq = node.attr_string("equation", "");
  std::string clean;
  for (char c : eq)
    if (c != ' ') clean += c;
  if (clean.find("...") != std::string::npos)
    fail(ErrorKind::kUnsupported, node.label(), ": Einsum with an ellipsis ('", eq,
         "') is not supported");
  EinsumSpec s;
  const size_t arrow = clean.find("->");
  const std::string lhs = clean.substr(0, arrow);
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i)
    if (i == lhs.size() || lhs[i] == ',') {
      s.inputs.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  auto letters_ok = [](const std::string& t) {
    for (char c : t)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return false;
    return true;
  };
  bool ok = !eq.empty() && s.inputs.size() == shapes.size();
  for (const std::string& t : s.inputs) ok = ok && letters_ok(t);
  if (arrow != std::string::npos) {
    s.output = clean.substr(arrow + 2);
    ok = ok && letters_ok(s.output);
  }
  if (!ok)
    fail(ErrorKind::kInvalidInput, node.label(), ": Einsum equation '", eq, "' does not fit its ",
         shapes.size(), " inputs");
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    const std::string& t = s.inputs[k];
    if (t.size() != shapes[k].size())
      fail(ErrorKind::kInvalidInput, node.label(), ": Einsum operand ", k, " has subscripts '", t,
           "' but rank ", shapes[k].size());
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.find(t[i]) != i)
        fail(ErrorKind::kUnsupported, node.label(), ": Einsum subscript '", t[i],
             "' repeated within an operand (a diagonal) is not supported");
      const int64_t d = shapes[k][i];
      const int64_t known = s.size_of(t[i]);
      if (known == 0) {
        s.sizes.push_back({t[i], d});
      } else if (known != d) {
        fail(ErrorKind::kInvalidInput, node.label(), ": Einsum subscript '", t[i], "' has sizes ",
             known, " and ", d);
      }
    }
  }
  if (arrow == std::string::npos) {
    std::string once;
    for (const auto& [c, d] : s.sizes) {
      int count = 0;
      for (const std::string& t : s.inputs)
        count += static_cast<int>(std::count(t.begin(), t.end(), c));
      if (count == 1) once += c;
    }
    std::sort(once.begin(), once.end());
    s.output = once;
  }
  for (size_t i = 0; i < s.output.size(); ++i)
    if (s.size_of(s.output[i]) == 0 || s.output.find(s.output[i]) != i)
      fail(ErrorKind::kInvalidInput, node.label(), ": Einsum output subscript '", s.output[i],
           "' is not an input's or is repeated");
  return s;
}

}  // namespace dlas::shape_math
