// Preprocessing as part of the model: the new Preprocess fields (scale, channel order, input
// layout), its canonical JSON, the ONNX metadata round trip, the precedence flags > metadata >
// dataset default with errors that name their source, and the warnings.
#include <gtest/gtest.h>

#include <filesystem>

#include "data_test_util.h"
#include "dlas/model/onnx.h"
#include "dlas/system/loader.h"
#include "dlas/model/zoo.h"
#include "dlas/system/preprocess_meta.h"

namespace dlas::test {
namespace {

using data::ChannelOrder;
using data::DatasetInfo;
using data::InputLayout;
using data::Preprocess;

DatasetInfo info_of(const char* name, int64_t c, int64_t h, int64_t w, int classes = 10) {
  DatasetInfo i;
  i.name = name;
  i.channels = c;
  i.height = h;
  i.width = w;
  i.classes = classes;
  return i;
}

// A model whose input is `shape` (Flatten -> Gemm to 10 logits).
Graph model_taking(const Shape& shape) {
  Graph g;
  g.inputs.push_back({"x", DType::kF32, shape});
  const int64_t n = shape[1] * shape[2] * shape[3];
  g.initializers["w"] = Tensor::from_vector<float>({10, n}, std::vector<float>(10 * n, 0.01f));
  Node flat{"flatten", "Flatten", {"x"}, {"f"}, {}};
  flat.attrs["axis"] = int64_t{1};
  Node gemm{"fc", "Gemm", {"f", "w"}, {"logits"}, {}};
  gemm.attrs["transB"] = int64_t{1};
  g.nodes = {flat, gemm};
  g.outputs = {"logits"};
  g.infer();
  return g;
}

TEST(PreprocessLayout, ScaleChannelOrderAndNhwc) {
  // A 3x1x2 RGB image: channel c, pixel x holds 10 * c + x.
  const DatasetInfo info = info_of("rgb", 3, 1, 2);
  const std::vector<uint8_t> img = {0, 1, 10, 11, 20, 21};
  Preprocess p;
  p.scale = 1;
  std::vector<float> out(6);
  data::preprocess_image(p, info, img.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 1, 10, 11, 20, 21}));
  p.channel_order = ChannelOrder::kBgr;  // the channels reversed
  data::preprocess_image(p, info, img.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 21, 10, 11, 0, 1}));
  p.layout = InputLayout::kNhwc;  // [H][W][C]
  EXPECT_EQ(p.output_shape(info), (std::vector<int64_t>{1, 2, 3}));
  data::preprocess_image(p, info, img.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{20, 10, 0, 21, 11, 1}));
  // mean/std per channel of the model's order, after the reorder; x / scale first.
  p = Preprocess{};
  p.scale = 255;
  p.mean = {0.f, 0.f, 1.f};
  p.std = {1.f, 2.f, 1.f};
  data::preprocess_image(p, info, img.data(), out.data());
  EXPECT_FLOAT_EQ(out[1], 1.f / 255.f);
  EXPECT_FLOAT_EQ(out[2], 10.f / 255.f / 2.f);
  EXPECT_FLOAT_EQ(out[5], 21.f / 255.f - 1.f);
  // x / 255 is a division, bit for bit what NumPy and PyTorch compute.
  const std::vector<uint8_t> grey = {77};
  Preprocess q;
  float v = 0;
  data::preprocess_image(q, info_of("g", 1, 1, 1), grey.data(), &v);
  EXPECT_EQ(v, 77.f / 255.f);
}

TEST(PreprocessJson, CanonicalTextRoundTripsAndBadTextIsNamed) {
  Preprocess p;
  p.scale = 1;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  p.channel_order = ChannelOrder::kBgr;
  p.layout = InputLayout::kNhwc;
  p.resize = 256;
  p.crop_h = p.crop_w = 224;
  const std::string text = data::preprocess_to_json(p);
  EXPECT_EQ(text,
            "{\"scale\":1,\"mean\":[0.485,0.456,0.406],\"std\":[0.229,0.224,0.225],"
            "\"channel_order\":\"bgr\",\"layout\":\"nhwc\",\"resize\":256,\"crop\":[224,224]}");
  const Preprocess back = data::preprocess_from_json(text);
  EXPECT_EQ(back.scale, p.scale);
  EXPECT_EQ(back.mean, p.mean);  // exactly: the shortest text that reads back
  EXPECT_EQ(back.std, p.std);
  EXPECT_EQ(back.channel_order, p.channel_order);
  EXPECT_EQ(back.layout, p.layout);
  EXPECT_EQ(back.resize, 256);
  EXPECT_EQ(back.crop_h, 224);
  EXPECT_EQ(back.crop_w, 224);
  EXPECT_EQ(data::preprocess_to_json(back), text);
  // Keys left out keep the base's values; unknown keys are ignored.
  Preprocess base;
  base.pad = 2;
  const Preprocess partial = data::preprocess_from_json("{\"std\":0.5,\"extra\":1}", base);
  EXPECT_EQ(partial.std, std::vector<float>{0.5f});
  EXPECT_EQ(partial.pad, 2);
  expect_invalid([] { data::preprocess_from_json("{\"std\":[0]}"); }, {"'std' must be > 0"});
  expect_invalid([] { data::preprocess_from_json("{\"layout\":\"chw\"}"); }, {"layout", "chw"});
  expect_invalid([] { data::preprocess_from_json("{\"channel_order\":\"grb\"}"); },
                 {"channel_order", "grb"});
  expect_invalid([] { data::preprocess_from_json("{\"mean\":\"x\"}"); }, {"'mean'"});
  expect_invalid([] { data::preprocess_from_json("{mean"); }, {"not valid JSON"});
  // The flag parsers.
  EXPECT_EQ(data::parse_channel_values("0.5"), std::vector<float>{0.5f});
  EXPECT_EQ(data::parse_channel_values("1, 2,3"), (std::vector<float>{1, 2, 3}));
  expect_invalid([] { data::parse_channel_values("0.5,abc"); }, {"'0.5,abc' is not a number"});
  expect_invalid([] { data::parse_channel_values("1,"); }, {"not a number"});
  expect_invalid([] { data::parse_channel_order("rbg"); }, {"unknown channel order 'rbg'"});
  expect_invalid([] { data::parse_input_layout("hwc"); }, {"unknown input layout 'hwc'"});
}

TEST(PreprocessMetadata, OnnxRoundTripKeepsPreprocessingAndUnknownKeys) {
  Graph g = model_taking({1, 1, 28, 28});
  Preprocess p;
  p.mean = {0.f};
  p.std = {1.f};
  g.metadata.emplace_back("author", "someone");  // not dlas's: carried through
  set_preprocess_metadata(g, p);
  const auto file = std::filesystem::temp_directory_path() / "dlas_preprocess_meta_test.onnx";
  export_onnx_file(g, file.string());
  const Graph back = load_model(file.string());
  std::filesystem::remove(file);
  ASSERT_EQ(back.metadata.size(), 2u);
  EXPECT_EQ(back.metadata[0], (std::pair<std::string, std::string>{"author", "someone"}));
  EXPECT_EQ(back.metadata[1].first, kPreprocessKey);
  const auto read = preprocess_from_metadata(back);
  ASSERT_TRUE(read);
  EXPECT_EQ(data::preprocess_to_json(*read), data::preprocess_to_json(p));
  EXPECT_FALSE(preprocess_from_metadata(model_taking({1, 1, 28, 28})));
}

TEST(PreprocessMetadata, FlagsOverMetadataOverDatasetDefault) {
  const DatasetInfo fm = info_of("fashion-mnist", 1, 28, 28);
  Graph g = model_taking({1, 1, 28, 28});
  // Neither: the dataset's default, and a warning that names the values and the flags.
  ResolvedPreprocess r = resolve_preprocess(fm, {}, &g, "m.onnx");
  EXPECT_EQ(r.source, PreprocessSource::kDefault);
  EXPECT_EQ(r.pre.mean, std::vector<float>{0.2860f});
  const std::string w = default_preprocess_warning(r, fm, "m.onnx");
  for (const char* part : {"m.onnx", "fashion-mnist", "0.286", "0.353", "--mean", "--std"})
    EXPECT_NE(w.find(part), std::string::npos) << part << " in " << w;
  // Metadata wins over the default, and draws no warning.
  Preprocess scaled;
  set_preprocess_metadata(g, scaled);
  r = resolve_preprocess(fm, {}, &g, "m.onnx");
  EXPECT_EQ(r.source, PreprocessSource::kMetadata);
  EXPECT_EQ(r.pre.mean, std::vector<float>{0.f});
  EXPECT_EQ(r.pre.std, std::vector<float>{1.f});
  EXPECT_EQ(default_preprocess_warning(r, fm, "m.onnx"), "");
  // A flag wins over the metadata, field by field.
  PreprocessFlags f;
  f.std = std::vector<float>{0.5f};
  r = resolve_preprocess(fm, f, &g, "m.onnx");
  EXPECT_EQ(r.source, PreprocessSource::kFlagsAndMetadata);
  EXPECT_EQ(r.pre.std, std::vector<float>{0.5f});
  EXPECT_EQ(r.pre.mean, std::vector<float>{0.f});  // from the metadata
  // Flags alone override the default's fields; training keeps the augmentation.
  Graph plain = model_taking({1, 1, 28, 28});
  f = {};
  f.mean = std::vector<float>{0.f};
  r = resolve_preprocess(fm, f, &plain, "m.onnx", /*train=*/true);
  EXPECT_EQ(r.source, PreprocessSource::kFlags);
  EXPECT_EQ(r.pre.mean, std::vector<float>{0.f});
  EXPECT_EQ(r.pre.std, std::vector<float>{0.3530f});
  EXPECT_EQ(r.pre.pad, 2);
  // NHWC models take [N,H,W,C].
  Graph nhwc = model_taking({1, 28, 28, 1});
  expect_invalid([&] { resolve_preprocess(fm, {}, &nhwc, "k.onnx"); },
                 {"[1, 28, 28, 1]", "--input-layout nhwc"});
  f = {};
  f.layout = InputLayout::kNhwc;
  EXPECT_EQ(resolve_preprocess(fm, f, &nhwc, "k.onnx").pre.layout, InputLayout::kNhwc);
}

TEST(PreprocessMetadata, BadValuesNameTheirSource) {
  const DatasetInfo fm = info_of("fashion-mnist", 1, 28, 28);
  Graph g = model_taking({1, 1, 28, 28});
  PreprocessFlags f;
  f.mean = std::vector<float>{0.1f, 0.2f, 0.3f};
  expect_invalid([&] { resolve_preprocess(fm, f, &g, "m.onnx"); },
                 {"--mean has 3 values", "1 channel"});
  f = {};
  f.std = std::vector<float>{0.f};
  expect_invalid([&] { resolve_preprocess(fm, f, &g, "m.onnx"); }, {"--std", "> 0"});
  g.set_metadata(kPreprocessKey, "{\"std\": -1}");
  expect_invalid([&] { resolve_preprocess(fm, {}, &g, "m.onnx"); },
                 {"m.onnx: metadata 'dlas.preprocess'", "'std' must be > 0"});
  g.set_metadata(kPreprocessKey, "not json");
  expect_invalid([&] { preprocess_from_metadata(g, "m.onnx"); },
                 {"m.onnx: metadata 'dlas.preprocess'", "not valid JSON"});
  g.set_metadata(kPreprocessKey, "{\"mean\": [0.1, 0.2]}");
  expect_invalid([&] { resolve_preprocess(fm, {}, &g, "m.onnx"); },
                 {"m.onnx: metadata 'dlas.preprocess': mean has 2 values"});
}

TEST(PreprocessWarnings, ChanceLevel) {
  EXPECT_EQ(chance_level_warning(0.85, 10), "");
  EXPECT_EQ(chance_level_warning(0.1201, 10), "");
  const std::string w = chance_level_warning(0.104, 10);
  for (const char* part : {"10.40%", "chance", "--mean", "--std", "class order", "untrained"})
    EXPECT_NE(w.find(part), std::string::npos) << part << " in " << w;
  EXPECT_NE(chance_level_warning(0.0, 10), "");  // below chance counts (a permuted class order)
  EXPECT_NE(chance_level_warning(0.51, 2), "");
}

}  // namespace
}  // namespace dlas::test
