#include "dlas/algo/knobs.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "dlas/core/error.h"

namespace dlas {

const KnobSpec* KnobSpace::find(std::string_view name) const {
  for (const KnobSpec& s : knobs)
    if (s.name == name) return &s;
  return nullptr;
}

int64_t KnobSpace::size() const {
  int64_t n = 1;
  for (const KnobSpec& s : knobs) {
    const int64_t v = static_cast<int64_t>(s.values.size());
    if (v != 0 && n > std::numeric_limits<int64_t>::max() / v)
      return std::numeric_limits<int64_t>::max();
    n *= v;
  }
  return n;
}

void KnobSpace::validate(const Knobs& k, std::string_view context) const {
  for (const auto& [name, value] : k) {
    const KnobSpec* s = find(name);
    if (!s) {
      std::string known;
      for (const KnobSpec& x : knobs) known += (known.empty() ? "" : ", ") + x.name;
      fail(ErrorKind::kInvalidInput, context, ": unknown knob '", name,
           "' (knobs: ", known.empty() ? "none" : known, ")");
    }
    bool ok = false;
    for (int64_t v : s->values) ok |= v == value;
    if (!ok) {
      std::string allowed;
      for (int64_t v : s->values) allowed += (allowed.empty() ? "" : ", ") + std::to_string(v);
      fail(ErrorKind::kInvalidInput, context, ": knob '", name, "' = ", value, " is not one of {",
           allowed, "}");
    }
  }
  for (const KnobSpec& s : knobs)
    DLAS_CHECK(k.count(s.name), ErrorKind::kInvalidInput, context, ": knob '", s.name,
               "' is missing");
}

Knobs KnobSpace::point(int64_t i) const {
  Knobs k;
  for (const KnobSpec& s : knobs) {
    const int64_t n = static_cast<int64_t>(s.values.size());
    k[s.name] = s.values[static_cast<size_t>(i % n)];
    i /= n;
  }
  return k;
}

std::string knobs_to_json(const Knobs& k) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, v] : k) j[name] = v;
  return j.dump();
}

Knobs knobs_from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    fail(ErrorKind::kInvalidInput, "knobs: not JSON: ", e.what());
  }
  DLAS_CHECK(j.is_object(), ErrorKind::kInvalidInput, "knobs: expected a JSON object");
  Knobs k;
  for (auto it = j.begin(); it != j.end(); ++it) {
    DLAS_CHECK(it.value().is_number_integer(), ErrorKind::kInvalidInput, "knobs: '", it.key(),
               "' must be an integer");
    k[it.key()] = it.value().get<int64_t>();
  }
  return k;
}

std::string knobs_to_string(const Knobs& k) {
  std::string s;
  for (const auto& [name, v] : k) s += (s.empty() ? "" : ",") + name + "=" + std::to_string(v);
  return s;
}

}  // namespace dlas
