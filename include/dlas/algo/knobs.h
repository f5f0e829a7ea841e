// Schedule knobs (DLAS layer 4/5): the plain data an algorithm's schedule is
// made of -- tile sizes, loop order, unroll, vector block, parallel axis. The
// tuner only ever sees knobs. Every algorithm publishes, per problem, its knob
// space (each knob with its allowed values) and a default ('untuned') point;
// any valid point gives the same result.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dlas {

// name -> value. Ordered so the canonical string and JSON are stable.
using Knobs = std::map<std::string, int64_t>;

struct KnobSpec {
  std::string name;
  std::vector<int64_t> values;  // allowed values, in search order
  std::string doc;              // one line: what the knob changes
  // Optional names of the values, parallel to `values` (the sparse `format` knob:
  // "auto", "csr", "bsr4x1", ...), accepted wherever a knob is written as text.
  std::vector<std::string> labels = {};

  // A value written as text: one of the labels or an integer in `values`. Throws
  // kInvalidInput listing what is allowed.
  int64_t parse_value(std::string_view text) const;
};

struct KnobSpace {
  std::vector<KnobSpec> knobs;

  const KnobSpec* find(std::string_view name) const;
  // Number of points (product of the value counts; saturates at INT64_MAX).
  int64_t size() const;
  // Throws kInvalidInput naming the knob when `k` has an unknown knob, lacks one,
  // or holds a value outside the allowed list. `context` prefixes the message.
  void validate(const Knobs& k, std::string_view context) const;
  // The i-th point in mixed-radix order (i < size()); tests sample with it.
  Knobs point(int64_t i) const;
};

// An algorithm with knob overrides, as written on the command line and in study specs:
// "NAME" or "NAME:knob=value,knob=value" (values as KnobSpec::parse_value reads them).
// Every layer the algorithm runs gets its default point with these knobs replaced.
struct AlgoChoiceSpec {
  std::string algo;
  std::vector<std::pair<std::string, std::string>> knobs;  // in the order written
};
// Throws kInvalidInput on a malformed override ("sparse-direct:format" lacks '=').
AlgoChoiceSpec parse_algo_choice(std::string_view text);
// Applies the overrides to `knobs` (an algorithm's default point) given its space;
// kInvalidInput names `context` and the knob when the space lacks it or the value is not
// allowed.
void apply_knob_overrides(const AlgoChoiceSpec& spec, const KnobSpace& space, Knobs& knobs,
                          std::string_view context);

// {"mb":8,"nb":64} (keys sorted), and back. Parsing throws kInvalidInput.
std::string knobs_to_json(const Knobs& k);
Knobs knobs_from_json(std::string_view json);
// "mb=8,nb=64": the canonical form inside variant strings.
std::string knobs_to_string(const Knobs& k);

}  // namespace dlas
