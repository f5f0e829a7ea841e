#include "dlas/algo/knobs.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

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

int64_t KnobSpec::parse_value(std::string_view text) const {
  for (size_t i = 0; i < labels.size() && i < values.size(); ++i)
    if (labels[i] == text) return values[i];
  int64_t v = 0;
  bool numeric = !text.empty();
  size_t i = text[0] == '-' ? 1 : 0;
  numeric = numeric && i < text.size();
  for (; numeric && i < text.size(); ++i) numeric = text[i] >= '0' && text[i] <= '9';
  if (numeric) {
    v = std::stoll(std::string(text));
    for (int64_t allowed : values)
      if (allowed == v) return v;
  }
  std::string allowed;
  for (size_t j = 0; j < values.size(); ++j) {
    allowed += (allowed.empty() ? "" : ", ") + std::to_string(values[j]);
    if (j < labels.size()) allowed += " (" + labels[j] + ")";
  }
  fail(ErrorKind::kInvalidInput, "knob '", name, "' = '", text, "' is not one of {", allowed, "}");
}

AlgoChoiceSpec parse_algo_choice(std::string_view text) {
  AlgoChoiceSpec spec;
  const size_t colon = text.find(':');
  spec.algo = std::string(text.substr(0, colon));
  DLAS_CHECK(!spec.algo.empty(), ErrorKind::kInvalidInput, "'", text,
             "': missing the algorithm name before ':'");
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  DLAS_CHECK(!rest.empty(), ErrorKind::kInvalidInput, "'", text, "': no knobs after ':'");
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const size_t eq = part.find('=');
    DLAS_CHECK(eq != std::string_view::npos && eq > 0 && eq + 1 < part.size(),
               ErrorKind::kInvalidInput, "'", text, "': expected knob=value, got '", part, "'");
    spec.knobs.emplace_back(std::string(part.substr(0, eq)), std::string(part.substr(eq + 1)));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
    DLAS_CHECK(!rest.empty(), ErrorKind::kInvalidInput, "'", text, "': trailing ','");
  }
  return spec;
}

void apply_knob_overrides(const AlgoChoiceSpec& spec, const KnobSpace& space, Knobs& knobs,
                          std::string_view context) {
  for (const auto& [name, value] : spec.knobs) {
    const KnobSpec* s = space.find(name);
    if (!s) {
      std::string known;
      for (const KnobSpec& x : space.knobs) known += (known.empty() ? "" : ", ") + x.name;
      fail(ErrorKind::kInvalidInput, context, ": algorithm '", spec.algo, "' has no knob '", name,
           "' here (knobs: ", known.empty() ? "none" : known, ")");
    }
    try {
      knobs[name] = s->parse_value(value);
    } catch (const Error& e) {
      fail(ErrorKind::kInvalidInput, context, ": ", e.what());
    }
  }
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
