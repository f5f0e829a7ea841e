// Preprocessing as part of the model: the preprocessing a model expects travels in its ONNX
// metadata (Graph::metadata, key kPreprocessKey, the canonical JSON of
// data::preprocess_to_json), and every command that feeds a dataset to a model resolves it
// the same way:
//
//   flags  >  the model's metadata  >  the dataset's default
//
// field by field (a flag replaces its field; the fields no flag gives come from the
// metadata, else from the dataset's default). With neither flags nor metadata the dataset's
// default applies and default_preprocess_warning() says so in one line.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlas/data/dataset.h"
#include "dlas/model/graph.h"

namespace dlas {

// The metadata key dlas stores a model's preprocessing under.
inline constexpr const char* kPreprocessKey = "dlas.preprocess";

// The preprocessing stored in `g`'s metadata, nullopt when the key is absent. kInvalidInput
// naming `model` and the key when its value is not valid ("m.onnx: metadata 'dlas.preprocess':
// 'std' must be > 0").
std::optional<data::Preprocess> preprocess_from_metadata(const Graph& g,
                                                         std::string_view model = "the model");
// Stores the test-time part of `p` in `g`'s metadata (replacing an earlier value).
void set_preprocess_metadata(Graph& g, const data::Preprocess& p);

// The preprocessing flags, each optional (--mean, --std, --scale, --channel-order,
// --input-layout, --resize, --center-crop).
struct PreprocessFlags {
  std::optional<std::vector<float>> mean, std;
  std::optional<float> scale;
  std::optional<data::ChannelOrder> channel_order;
  std::optional<data::InputLayout> layout;
  std::optional<int> resize;
  std::optional<int> center_crop;
  bool any() const;
  // The flags as command-line arguments ("--mean 0.5 --std 0.25"), in canonical form.
  std::vector<std::string> to_args() const;
  // The same arguments joined by spaces ("" when none is given).
  std::string str() const;
};

// Where the preprocessing in force came from.
enum class PreprocessSource { kFlags, kMetadata, kFlagsAndMetadata, kDefault };
const char* preprocess_source_name(PreprocessSource s);  // "flags", "metadata", ...

struct ResolvedPreprocess {
  data::Preprocess pre;
  PreprocessSource source = PreprocessSource::kDefault;
};

// flags > `g`'s metadata > default_preprocess(info, train), checked against `g`'s image input
// (its first input, [N,C,H,W] or [N,H,W,C] for layout nhwc): kInvalidInput with one line
// that names the flag ("--mean has 3 values, the model's input has 1 channel"), the model and
// metadata key, or both shapes. Training keeps the dataset's augmentation (pad, flip). With
// `g` null: flags > default, unchecked (what `dlas data info` shows for a dataset alone).
ResolvedPreprocess resolve_preprocess(const data::DatasetInfo& info, const PreprocessFlags& flags,
                                      const Graph* g, std::string_view model = "the model",
                                      bool train = false);

// The warning for the dataset's default used without flags or metadata ("" otherwise), one
// line naming the values and the flags that change them.
std::string default_preprocess_warning(const ResolvedPreprocess& r, const data::DatasetInfo& info,
                                       std::string_view model);

// The warning for a top-1 (a fraction) within 2 points of chance (1 / classes), "" otherwise:
// one line naming the likely causes (the preprocessing and its flags, the class order, an
// untrained model).
std::string chance_level_warning(double top1, int classes);

}  // namespace dlas
