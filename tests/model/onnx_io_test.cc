// ONNX import/export: round trips, opset normalisation, hostile input.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <unistd.h>

#include "dlas/core/npy.h"
#include "dlas/model/onnx.h"
#include "dlas/model/op_schema.h"
#include "dlas/system/executor.h"
#include "dlas/system/passes.h"
#include "model/onnx/onnx_tensor.h"

namespace dlas {
namespace {

namespace fs = std::filesystem;
constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;

// Builds small ONNX models by hand, the way an exporter would.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset, int64_t ir_version = 7) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("onnx_io_test");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test_graph");
  }
  // dims: -1 marks a dynamic dim (dim_param "N"); nullopt: no shape at all.
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims,
                      int elem_type = kFloat) {
    auto* vi = graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) {
        shape->add_dim()->set_dim_param("N");
      } else {
        shape->add_dim()->set_dim_value(d);
      }
    }
    return *this;
  }
  ModelBuilder& input_without_shape(const std::string& name) {
    auto* vi = graph()->add_input();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
    return *this;
  }
  ModelBuilder& output(const std::string& name, int elem_type = kFloat) {
    auto* vi = graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const Tensor& t) {
    onnx_io::tensor_to_proto(t, name, graph()->add_initializer());
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }
  std::string bytes() const {
    std::string s;
    EXPECT_TRUE(model_.SerializeToString(&s));
    return s;
  }

 private:
  onnx::ModelProto model_;
};

void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void set_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

Tensor iota_f32(const Shape& shape, float start = 0.f, float step = 1.f) {
  Tensor t(DType::kF32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = start + step * static_cast<float>(i);
  return t;
}

// import -> fold -> infer -> run, as load_model does for files.
std::vector<Tensor> run_model(const std::string& bytes, const std::vector<Tensor>& inputs,
                              const OnnxImportOptions& options = {}) {
  Graph g = import_onnx_bytes(bytes, "test.onnx", options);
  fold_constants(g);
  ReferenceExecutor ex(std::move(g));
  return ex.run(inputs);
}

void expect_tensor_near(const Tensor& got, const Shape& shape, const std::vector<float>& want,
                        float tol = 1e-5f) {
  ASSERT_EQ(got.dtype(), DType::kF32);
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data<float>()[i], want[i], tol) << "element " << i;
}

const Node& find_node(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op == op) return n;
  throw std::runtime_error("no " + op + " node");
}

int count_ops(const Graph& g, const std::string& op) {
  int c = 0;
  for (const Node& n : g.nodes) c += n.op == op;
  return c;
}

// Expects `fn` to throw dlas::Error of `kind` whose message contains every `needles`.
template <class Fn>
void expect_error(Fn&& fn, ErrorKind kind, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(error_kind_name(e.kind()), std::string(error_kind_name(kind))) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message '" << e.what() << "' lacks '" << n << "'";
  }
}

// A small CNN-like graph built directly in the IR.
Graph make_small_cnn() {
  Graph g;
  g.name = "small_cnn";
  g.inputs.push_back({"x", DType::kF32, {1, 2, 5, 5}});
  g.initializers["w"] = iota_f32({3, 2, 3, 3}, -0.5f, 0.01f);
  g.initializers["b"] = iota_f32({3}, 0.1f, 0.1f);
  g.initializers["scale"] = iota_f32({3}, 1.f, 0.5f);
  g.initializers["bias"] = iota_f32({3}, 0.f, -0.2f);
  g.initializers["mean"] = iota_f32({3}, 0.05f, 0.05f);
  g.initializers["var"] = iota_f32({3}, 1.f, 0.25f);
  g.initializers["fc_w"] = iota_f32({4, 12}, 0.3f, -0.02f);
  g.initializers["fc_b"] = iota_f32({4}, 0.f, 0.01f);
  g.initializers["shape"] = Tensor::from_vector<int64_t>({2}, {1, -1});
  Node conv{"conv", "Conv", {"x", "w", "b"}, {"c"}, {}};
  conv.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  conv.attrs["strides"] = std::vector<int64_t>{2, 2};
  Node bn{"bn", "BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"n"}, {}};
  bn.attrs["epsilon"] = 1e-3f;
  Node relu{"relu", "Relu", {"n"}, {"r"}, {}};
  Node pool{"pool", "MaxPool", {"r"}, {"p"}, {}};
  pool.attrs["kernel_shape"] = std::vector<int64_t>{2, 2};
  Node flat{"reshape", "Reshape", {"p", "shape"}, {"f"}, {}};
  Node fc{"fc", "Gemm", {"f", "fc_w", "fc_b"}, {"y"}, {}};
  fc.attrs["transB"] = int64_t{1};
  Node sm{"softmax", "Softmax", {"y"}, {"prob"}, {}};
  sm.attrs["axis"] = int64_t{-1};
  g.nodes = {conv, bn, relu, pool, flat, fc, sm};
  g.outputs = {"prob", "r"};
  g.infer();
  return g;
}

TEST(OnnxIo, RoundTripKeepsGraphAndOutputs) {
  Graph g = make_small_cnn();
  const std::string bytes = export_onnx_bytes(g);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  EXPECT_EQ(proto.ir_version(), 8);
  ASSERT_EQ(proto.opset_import_size(), 1);
  EXPECT_EQ(proto.opset_import(0).domain(), "");
  EXPECT_EQ(proto.opset_import(0).version(), 13);
  EXPECT_EQ(proto.producer_name(), "dlas");
  EXPECT_EQ(proto.graph().name(), "small_cnn");
  ASSERT_EQ(proto.graph().input_size(), 1);
  EXPECT_EQ(proto.graph().input(0).type().tensor_type().shape().dim(3).dim_value(), 5);
  ASSERT_EQ(proto.graph().output_size(), 2);
  EXPECT_EQ(proto.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 4);
  for (const auto& init : proto.graph().initializer()) EXPECT_TRUE(init.has_raw_data());

  Graph back = import_onnx_bytes(bytes, "round_trip.onnx");
  back.infer();
  EXPECT_EQ(back.name, g.name);
  ASSERT_EQ(back.nodes.size(), g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].name, g.nodes[i].name);
    EXPECT_EQ(back.nodes[i].op, g.nodes[i].op);
    EXPECT_EQ(back.nodes[i].inputs, g.nodes[i].inputs);
    EXPECT_EQ(back.nodes[i].outputs, g.nodes[i].outputs);
    EXPECT_EQ(back.nodes[i].attrs.size(), g.nodes[i].attrs.size());
  }
  EXPECT_EQ(back.outputs, g.outputs);
  ASSERT_EQ(back.initializers.size(), g.initializers.size());
  for (const auto& [name, t] : g.initializers) {
    const Tensor* u = back.constant(name);
    ASSERT_NE(u, nullptr) << name;
    EXPECT_EQ(u->dtype(), t.dtype());
    EXPECT_EQ(u->shape(), t.shape());
    EXPECT_EQ(std::memcmp(u->raw(), t.raw(), t.nbytes()), 0) << name;
  }
  for (const auto& o : g.outputs) EXPECT_EQ(back.value(o).shape, g.value(o).shape);

  const Tensor x = iota_f32({1, 2, 5, 5}, -1.f, 0.037f);
  const auto want = ReferenceExecutor(g).run({x});
  fold_constants(back);
  const auto got = ReferenceExecutor(back).run({x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    EXPECT_EQ(std::memcmp(got[i].raw(), want[i].raw(), got[i].nbytes()), 0) << "output " << i;
  }
}

TEST(OnnxIo, RoundTripAttributesAndDtypes) {
  Graph g;
  g.name = "attrs";
  g.inputs.push_back({"x", DType::kF32, {2, 3}});
  g.initializers["h"] = Tensor(DType::kF16, {3});
  g.initializers["h"].bits16()[1] = f32_to_f16(1.5f);
  g.initializers["q"] = Tensor::from_vector<int8_t>({2}, {-3, 7});
  g.initializers["u"] = Tensor::from_vector<uint8_t>({2}, {0, 255});
  g.initializers["i"] = Tensor::from_vector<int32_t>({1}, {-123456});
  Node n{"clip", "Clip", {"x"}, {"y"}, {}};
  n.attrs["f"] = 0.25f;
  n.attrs["s"] = std::string("text");
  n.attrs["fs"] = std::vector<float>{1.f, -2.f};
  n.attrs["ss"] = std::vector<std::string>{"a", "bc"};
  n.attrs["t"] = Tensor::from_vector<int64_t>({2}, {4, 5});
  g.nodes = {n};
  g.outputs = {"y"};
  g.set_value({"y", DType::kF32, {2, 3}});  // export needs output types; Clip ignores attrs here
  const Graph back = import_onnx_bytes(export_onnx_bytes(g), "attrs.onnx");
  const Node& m = back.nodes.at(0);
  EXPECT_EQ(m.attr_float("f", 0.f), 0.25f);
  EXPECT_EQ(m.attr_string("s", ""), "text");
  EXPECT_EQ(m.attr_floats("fs", {}), (std::vector<float>{1.f, -2.f}));
  EXPECT_EQ(std::get<std::vector<std::string>>(m.attrs.at("ss")),
            (std::vector<std::string>{"a", "bc"}));
  ASSERT_NE(m.attr_tensor("t"), nullptr);
  EXPECT_EQ(m.attr_tensor("t")->to_int64_vector(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(back.constant("h")->dtype(), DType::kF16);
  EXPECT_EQ(f16_to_f32(back.constant("h")->bits16()[1]), 1.5f);
  EXPECT_EQ(back.constant("q")->to_int64_vector(), (std::vector<int64_t>{-3, 7}));
  EXPECT_EQ(back.constant("u")->to_int64_vector(), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(back.constant("i")->to_int64_vector(), (std::vector<int64_t>{-123456}));
}

TEST(OnnxIo, FileRoundTripAndAtomicExport) {
  const fs::path dir = fs::temp_directory_path() / ("dlas_onnx_io_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Graph g = make_small_cnn();
  const std::string path = (dir / "m.onnx").string();
  export_onnx_file(g, path);
  Graph back = import_onnx_file(path);
  EXPECT_EQ(back.nodes.size(), g.nodes.size());

  // Target folder missing: an error, and nothing is written anywhere.
  const fs::path missing = dir / "no_such_dir" / "m.onnx";
  EXPECT_THROW(export_onnx_file(g, missing.string()), Error);
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(missing.parent_path()));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // only m.onnx, no temporary left behind
  fs::remove_all(dir);
}

TEST(OnnxIo, MissingFileNamesFile) {
  expect_error([] { import_onnx_file("/nonexistent/dir/model.onnx"); }, ErrorKind::kInvalidInput,
               {"/nonexistent/dir/model.onnx"});
}

TEST(OnnxIo, TruncatedModelIsInvalidInput) {
  const std::string bytes = export_onnx_bytes(make_small_cnn());
  ASSERT_GT(bytes.size(), 100u);
  // Every strict prefix must be rejected as invalid input, never crash or import.
  for (size_t len = 0; len < bytes.size(); ++len) {
    try {
      import_onnx_bytes(std::string_view(bytes.data(), len), "cut.onnx");
      ADD_FAILURE() << "prefix of " << len << " bytes was accepted";
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::kInvalidInput) << len << ": " << e.what();
      ASSERT_NE(std::string(e.what()).find("cut.onnx"), std::string::npos) << e.what();
    }
  }
  // The same through files, at a few lengths.
  const fs::path path =
      fs::temp_directory_path() / ("dlas_cut_" + std::to_string(::getpid()) + ".onnx");
  for (size_t len : {size_t{0}, size_t{1}, size_t{17}, bytes.size() / 2, bytes.size() - 1}) {
    write_file_atomic(path.string(), std::string_view(bytes.data(), len));
    expect_error([&] { import_onnx_file(path.string()); }, ErrorKind::kInvalidInput,
                 {path.string()});
  }
  fs::remove(path);
}

TEST(OnnxIo, GarbageIsInvalidInput) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::string junk(static_cast<size_t>(rng() % 4096), '\0');
    for (char& c : junk) c = static_cast<char>(rng() & 0xff);
    expect_error([&] { import_onnx_bytes(junk, "junk.onnx"); }, ErrorKind::kInvalidInput,
                 {"junk.onnx"});
  }
  expect_error([] { import_onnx_bytes("this is not a model", "text.onnx"); },
               ErrorKind::kInvalidInput, {"text.onnx: not a valid ONNX model"});
}

// External data: written beside the model and read back bit for bit; a location outside
// the model's folder (absolute, "..", or a symlink out), a missing file or one too short is
// exit-2 input naming the initializer.
TEST(OnnxIo, ExternalDataRoundTripAndConfinement) {
  const fs::path dir = fs::temp_directory_path() / ("dlas_onnx_ext_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "model");
  Graph g = make_small_cnn();
  const std::string path = (dir / "model" / "m.onnx").string();
  export_onnx_file(g, path, /*external_data=*/true);
  ASSERT_TRUE(fs::exists(path + ".data"));
  EXPECT_GE(fs::file_size(path + ".data"), static_cast<uintmax_t>(g.weight_bytes()));
  EXPECT_LE(fs::file_size(path) + static_cast<uintmax_t>(g.weight_bytes()),
            export_onnx_bytes(g).size() + 64 * g.initializers.size());  // no weight bytes inside
  const Graph back = import_onnx_file(path);
  ASSERT_EQ(back.initializers.size(), g.initializers.size());
  for (const auto& [name, t] : g.initializers) {
    const Tensor& b = back.initializers.at(name);
    ASSERT_EQ(b.shape(), t.shape()) << name;
    EXPECT_EQ(std::memcmp(b.raw(), t.raw(), t.nbytes()), 0) << name;
  }

  // One Add whose constant 'w' (2 floats) lives at `location` from offset 0.
  auto model_at = [&](const std::string& location) {
    ModelBuilder b(13);
    b.input("x", {2});
    auto* init = b.graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(kFloat);
    init->add_dims(2);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = init->add_external_data();
    e->set_key("location");
    e->set_value(location);
    b.node("Add", {"x", "w"}, {"y"}, "add");
    b.output("y");
    const std::string file = (dir / "model" / "hostile.onnx").string();
    std::ofstream(file, std::ios::binary) << b.bytes();
    return file;
  };
  std::ofstream(dir / "outside.bin", std::ios::binary) << std::string(8, '\0');
  std::ofstream(dir / "model" / "short.bin", std::ios::binary) << std::string(4, '\0');
  std::ofstream(dir / "model" / "ok.bin", std::ios::binary) << std::string(8, '\0');
  fs::create_symlink(dir / "outside.bin", dir / "model" / "link.bin");
  EXPECT_EQ(import_onnx_file(model_at("ok.bin")).initializers.at("w").numel(), 2);
  expect_error([&] { import_onnx_file(model_at("../outside.bin")); }, ErrorKind::kInvalidInput,
               {"'w'", "leaves the model's folder"});
  expect_error([&] { import_onnx_file(model_at((dir / "outside.bin").string())); },
               ErrorKind::kInvalidInput, {"'w'", "leaves the model's folder"});
  expect_error([&] { import_onnx_file(model_at("link.bin")); }, ErrorKind::kInvalidInput,
               {"'w'", "outside the model's folder"});
  expect_error([&] { import_onnx_file(model_at("nothing.bin")); }, ErrorKind::kInvalidInput,
               {"'w'", "not found"});
  expect_error([&] { import_onnx_file(model_at("short.bin")); }, ErrorKind::kInvalidInput,
               {"'w'", "holds 4 bytes"});
  fs::remove_all(dir);
}

TEST(OnnxIo, HostileTensorsAreRejected) {
  auto model_with = [](auto&& edit) {
    ModelBuilder b(13);
    b.input("x", {2});
    auto* init = b.graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(kFloat);
    edit(*init);
    b.node("Add", {"x", "w"}, {"y"}, "add");
    b.output("y");
    return b.bytes();
  };
  // Huge dims without the data: must fail before allocating.
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(int64_t{1} << 40);
                            t.add_dims(int64_t{1} << 20);
                          }),
                          "huge.onnx");
      },
      ErrorKind::kInvalidInput, {"huge.onnx", "'w'"});
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(int64_t{1} << 62);
                            t.add_dims(8);
                          }),
                          "overflow.onnx");
      },
      ErrorKind::kInvalidInput, {"'w'"});
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(-2);
                            t.add_float_data(1.f);
                          }),
                          "negative.onnx");
      },
      ErrorKind::kInvalidInput, {"negative dimension"});
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(2);
                            t.set_raw_data(std::string(7, '\0'));
                          }),
                          "raw.onnx");
      },
      ErrorKind::kInvalidInput, {"raw_data"});
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(3);
                            t.add_float_data(1.f);
                          }),
                          "typed.onnx");
      },
      ErrorKind::kInvalidInput, {"'w'"});
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(2);
                            t.set_data_type(onnx::TensorProto::DOUBLE);
                            t.add_double_data(1.0);
                            t.add_double_data(2.0);
                          }),
                          "double.onnx");
      },
      ErrorKind::kUnsupported, {"'w'", "DOUBLE"});
  expect_error(
      [&] {
        import_onnx_bytes(model_with([](auto& t) {
                            t.add_dims(2);
                            t.set_data_location(onnx::TensorProto::EXTERNAL);
                            auto* e = t.add_external_data();
                            e->set_key("location");
                            e->set_value("weights.bin");
                          }),
                          "external.onnx");
      },
      ErrorKind::kUnsupported, {"'w'", "external"});
  // Missing names.
  {
    ModelBuilder b(13);
    b.input("", {2});
    b.node("Relu", {""}, {"y"});
    b.output("y");
    expect_error([&] { import_onnx_bytes(b.bytes(), "noname.onnx"); }, ErrorKind::kInvalidInput,
                 {"noname.onnx", "no name"});
  }
  // No graph at all, or no opset.
  {
    onnx::ModelProto m;
    m.set_ir_version(8);
    std::string s;
    m.SerializeToString(&s);
    expect_error([&] { import_onnx_bytes(s, "empty.onnx"); }, ErrorKind::kInvalidInput,
                 {"empty.onnx"});
  }
}

TEST(OnnxIo, UnsupportedThingsNameNodeAndOp) {
  {
    ModelBuilder b(13);
    b.input("x", {2});
    b.node("FrobnicateTensor", {"x"}, {"y"}, "frob1");
    b.output("y");
    expect_error([&] { import_onnx_bytes(b.bytes(), "frob.onnx"); }, ErrorKind::kUnsupported,
                 {"frob.onnx", "frob1", "FrobnicateTensor"});
  }
  {
    ModelBuilder b(13);
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"}, "custom_relu").set_domain("com.example");
    b.output("y");
    expect_error([&] { import_onnx_bytes(b.bytes(), "dom.onnx"); }, ErrorKind::kUnsupported,
                 {"custom_relu", "com.example"});
  }
  {
    ModelBuilder b(13);
    b.input("x", {2});
    auto& n = b.node("Relu", {"x"}, {"y"}, "with_graph");
    auto* a = n.add_attribute();
    a->set_name("body");
    a->set_type(onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name("sub");
    b.output("y");
    expect_error([&] { import_onnx_bytes(b.bytes(), "g.onnx"); }, ErrorKind::kUnsupported,
                 {"with_graph", "body"});
  }
  {
    ModelBuilder b(13);
    b.input("x", {2}, onnx::TensorProto::DOUBLE);
    b.node("Relu", {"x"}, {"y"}, "r");
    b.output("y", onnx::TensorProto::DOUBLE);
    expect_error([&] { import_onnx_bytes(b.bytes(), "d.onnx"); }, ErrorKind::kUnsupported,
                 {"'x'", "DOUBLE"});
  }
  {
    ModelBuilder b(13);
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"}, "r");
    b.output("y", onnx::TensorProto::UINT16);
    expect_error([&] { import_onnx_bytes(b.bytes(), "b.onnx"); }, ErrorKind::kUnsupported,
                 {"'y'", "UINT16"});
  }
  {
    ModelBuilder b(19);
    b.input("x", {2});
    b.node("Relu", {"x"}, {"y"}, "r");
    b.output("y");
    expect_error([&] { import_onnx_bytes(b.bytes(), "new.onnx"); }, ErrorKind::kUnsupported,
                 {"opset 19"});
  }
}

TEST(OnnxIo, InputShapesDynamicDimsAndOverrides) {
  ModelBuilder b(13);
  b.input("x", {-1, 3});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  // A dynamic leading dim defaults to 1.
  Graph g = import_onnx_bytes(b.bytes(), "dyn.onnx");
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].shape, (Shape{1, 3}));
  // Unnamed node got a generated, unique name.
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_FALSE(g.nodes[0].name.empty());
  // An override wins.
  OnnxImportOptions opt;
  opt.input_shapes["x"] = {4, 3};
  const auto out = run_model(b.bytes(), {iota_f32({4, 3}, -6.f)}, opt);
  EXPECT_EQ(out.at(0).shape(), (Shape{4, 3}));
  EXPECT_EQ(out[0].data<float>()[0], 0.f);
  EXPECT_EQ(out[0].data<float>()[11], 5.f);
  // Naming an unknown input, or the wrong rank, is invalid input.
  OnnxImportOptions bad;
  bad.input_shapes["nope"] = {1};
  expect_error([&] { import_onnx_bytes(b.bytes(), "dyn.onnx", bad); }, ErrorKind::kInvalidInput,
               {"'nope'"});
  OnnxImportOptions bad_rank;
  bad_rank.input_shapes["x"] = {1, 2, 3};
  expect_error([&] { import_onnx_bytes(b.bytes(), "dyn.onnx", bad_rank); },
               ErrorKind::kInvalidInput, {"'x'", "rank"});

  // A dynamic dim that is not the leading one needs an override.
  ModelBuilder c(13);
  c.input("x", {1, -1});
  c.node("Relu", {"x"}, {"y"});
  c.output("y");
  expect_error([&] { import_onnx_bytes(c.bytes(), "dyn2.onnx"); }, ErrorKind::kInvalidInput,
               {"dyn2.onnx", "'x'", "--input-shape"});
  OnnxImportOptions fix;
  fix.input_shapes["x"] = {1, 7};
  EXPECT_EQ(import_onnx_bytes(c.bytes(), "dyn2.onnx", fix).inputs[0].shape, (Shape{1, 7}));

  ModelBuilder d(13);
  d.input_without_shape("x");
  d.node("Relu", {"x"}, {"y"});
  d.output("y");
  expect_error([&] { import_onnx_bytes(d.bytes(), "rank.onnx"); }, ErrorKind::kInvalidInput,
               {"--input-shape"});
}

TEST(OnnxIo, InitializerInputsAreNotRuntimeInputs) {
  ModelBuilder b(13, 3);
  b.input("x", {2});
  b.input("w", {2});
  b.initializer("w", Tensor::from_vector<float>({2}, {10.f, 20.f}));
  b.node("Add", {"x", "w"}, {"y"}, "add");
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "init.onnx");
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "x");
  const auto out = run_model(b.bytes(), {Tensor::from_vector<float>({2}, {1.f, 2.f})});
  expect_tensor_near(out.at(0), {2}, {11.f, 22.f});
}

TEST(OnnxIo, ConstantNodesBecomeInitializers) {
  ModelBuilder b(13);
  b.input("x", {2});
  auto& c = b.node("Constant", {}, {"k"}, "konst");
  auto* a = c.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx_io::tensor_to_proto(Tensor::from_vector<float>({2}, {3.f, 4.f}), "", a->mutable_t());
  auto& c2 = b.node("Constant", {}, {"m"}, "konst2");
  set_float(c2, "value_float", 2.f);
  b.node("Mul", {"x", "k"}, {"t"}, "mul");
  b.node("Mul", {"t", "m"}, {"y"}, "mul2");
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "const.onnx");
  EXPECT_EQ(count_ops(g, "Constant"), 0);
  ASSERT_NE(g.constant("k"), nullptr);
  const auto out = run_model(b.bytes(), {Tensor::from_vector<float>({2}, {1.f, -1.f})});
  expect_tensor_near(out.at(0), {2}, {6.f, -8.f});
}

// ---------------------------------------------------------------------------
// Opset normalisation: each older form imports into the opset-13 form and
// computes what the older opset specified.

TEST(OnnxIoOpset, UnsqueezeSqueezeAxesAttributeBecomesInput) {
  ModelBuilder b(11);
  b.input("x", {2, 3});
  set_ints(b.node("Unsqueeze", {"x"}, {"u"}, "unsq"), "axes", {0, 3});
  set_ints(b.node("Squeeze", {"u"}, {"y"}, "sq"), "axes", {0});
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "u.onnx");
  const Node& u = find_node(g, "Unsqueeze");
  ASSERT_EQ(u.inputs.size(), 2u);
  EXPECT_FALSE(u.has_attr("axes"));
  ASSERT_NE(g.constant(u.inputs[1]), nullptr);
  EXPECT_EQ(g.constant(u.inputs[1])->dtype(), DType::kS64);
  EXPECT_EQ(g.constant(u.inputs[1])->to_int64_vector(), (std::vector<int64_t>{0, 3}));
  const auto out = run_model(b.bytes(), {iota_f32({2, 3})});
  EXPECT_EQ(out.at(0).shape(), (Shape{2, 3, 1}));
}

TEST(OnnxIoOpset, SplitAttributeBecomesInput) {
  ModelBuilder b(11);
  b.input("x", {5, 2});
  auto& s = b.node("Split", {"x"}, {"a", "c"}, "split");
  set_int(s, "axis", 0);
  set_ints(s, "split", {2, 3});
  b.output("a");
  b.output("c");
  Graph g = import_onnx_bytes(b.bytes(), "s.onnx");
  const Node& n = find_node(g, "Split");
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(g.constant(n.inputs[1])->to_int64_vector(), (std::vector<int64_t>{2, 3}));
  const auto out = run_model(b.bytes(), {iota_f32({5, 2})});
  expect_tensor_near(out.at(0), {2, 2}, {0, 1, 2, 3});
  expect_tensor_near(out.at(1), {3, 2}, {4, 5, 6, 7, 8, 9});
}

TEST(OnnxIoOpset, ClipAttributesBecomeInputs) {
  ModelBuilder b(6);
  b.input("x", {5});
  auto& c = b.node("Clip", {"x"}, {"y"}, "clip");
  set_float(c, "min", -1.f);
  set_float(c, "max", 1.5f);
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "c.onnx");
  EXPECT_EQ(find_node(g, "Clip").inputs.size(), 3u);
  const auto out = run_model(b.bytes(), {iota_f32({5}, -2.f)});
  expect_tensor_near(out.at(0), {5}, {-1, -1, 0, 1, 1.5});
  // Only max given: min stays absent.
  ModelBuilder m(10);
  m.input("x", {3});
  set_float(m.node("Clip", {"x"}, {"y"}, "clip"), "max", 0.5f);
  m.output("y");
  Graph gm = import_onnx_bytes(m.bytes(), "c.onnx");
  const Node& cm = find_node(gm, "Clip");
  ASSERT_EQ(cm.inputs.size(), 3u);
  EXPECT_TRUE(cm.inputs[1].empty());
  expect_tensor_near(run_model(m.bytes(), {iota_f32({3}, -1.f)}).at(0), {3}, {-1, 0, 0.5});
}

TEST(OnnxIoOpset, PadAttributesBecomeInputs) {
  ModelBuilder b(2);
  b.input("x", {1, 2});
  auto& p = b.node("Pad", {"x"}, {"y"}, "pad");
  set_string(p, "mode", "constant");
  set_ints(p, "pads", {0, 1, 0, 2});
  set_float(p, "value", 9.f);
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "p.onnx");
  const Node& n = find_node(g, "Pad");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(g.constant(n.inputs[1])->to_int64_vector(), (std::vector<int64_t>{0, 1, 0, 2}));
  const auto out = run_model(b.bytes(), {iota_f32({1, 2}, 1.f)});
  expect_tensor_near(out.at(0), {1, 5}, {9, 1, 2, 9, 9});
  // Opset 1 calls the attribute `paddings`; reflect mode has no value.
  ModelBuilder r(1);
  r.input("x", {1, 3});
  auto& q = r.node("Pad", {"x"}, {"y"}, "pad");
  set_string(q, "mode", "reflect");
  set_ints(q, "paddings", {0, 2, 0, 1});
  r.output("y");
  expect_tensor_near(run_model(r.bytes(), {iota_f32({1, 3}, 1.f)}).at(0), {1, 6},
                     {3, 2, 1, 2, 3, 2});
}

TEST(OnnxIoOpset, SliceAttributesBecomeInputs) {
  ModelBuilder b(9);
  b.input("x", {3, 4});
  auto& s = b.node("Slice", {"x"}, {"y"}, "slice");
  set_ints(s, "starts", {1, -3});
  set_ints(s, "ends", {1000, 3});
  set_ints(s, "axes", {0, 1});
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "sl.onnx");
  EXPECT_EQ(find_node(g, "Slice").inputs.size(), 4u);
  const auto out = run_model(b.bytes(), {iota_f32({3, 4})});
  expect_tensor_near(out.at(0), {2, 2}, {5, 6, 9, 10});
}

// Softmax over the flattened trailing block [axis:], as opsets < 13 define it.
std::vector<float> coerced_softmax(const Tensor& x, int axis, bool log) {
  int64_t outer = 1;
  for (int i = 0; i < axis; ++i) outer *= x.dim(i);
  const int64_t inner = x.numel() / outer;
  std::vector<float> y(static_cast<size_t>(x.numel()));
  const float* p = x.data<float>();
  for (int64_t o = 0; o < outer; ++o) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < inner; ++i) mx = std::max<double>(mx, p[o * inner + i]);
    for (int64_t i = 0; i < inner; ++i) sum += std::exp(p[o * inner + i] - mx);
    for (int64_t i = 0; i < inner; ++i) {
      const double v = p[o * inner + i] - mx;
      y[o * inner + i] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
    }
  }
  return y;
}

TEST(OnnxIoOpset, SoftmaxCoerceTo2dRewrite) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    const bool log = std::string(op) == "LogSoftmax";
    const Tensor x = iota_f32({2, 3, 4}, -1.f, 0.13f);
    // Default axis=1 on a rank-3 input: Flatten -> op(-1) -> Reshape(Shape(x)).
    ModelBuilder b(11);
    b.input("x", {2, 3, 4});
    b.node(op, {"x"}, {"y"}, "sm");
    b.output("y");
    Graph g = import_onnx_bytes(b.bytes(), "sm.onnx");
    EXPECT_EQ(count_ops(g, "Flatten"), 1);
    EXPECT_EQ(count_ops(g, "Reshape"), 1);
    EXPECT_EQ(count_ops(g, "Shape"), 1);
    EXPECT_EQ(find_node(g, op).attr_int("axis", 0), -1);
    expect_tensor_near(run_model(b.bytes(), {x}).at(0), {2, 3, 4}, coerced_softmax(x, 1, log));
    // axis=0 flattens everything.
    ModelBuilder z(12);
    z.input("x", {2, 3, 4});
    set_int(z.node(op, {"x"}, {"y"}, "sm"), "axis", 0);
    z.output("y");
    expect_tensor_near(run_model(z.bytes(), {x}).at(0), {2, 3, 4}, coerced_softmax(x, 0, log));
    // The last axis keeps a single node.
    ModelBuilder l(11);
    l.input("x", {2, 3, 4});
    set_int(l.node(op, {"x"}, {"y"}, "sm"), "axis", 2);
    l.output("y");
    Graph gl = import_onnx_bytes(l.bytes(), "sm.onnx");
    EXPECT_EQ(gl.nodes.size(), 1u);
    EXPECT_EQ(gl.nodes[0].attr_int("axis", 0), -1);
    expect_tensor_near(run_model(l.bytes(), {x}).at(0), {2, 3, 4}, coerced_softmax(x, 2, log));
    // Opset 13 keeps per-axis semantics untouched.
    ModelBuilder n(13);
    n.input("x", {2, 3, 4});
    set_int(n.node(op, {"x"}, {"y"}, "sm"), "axis", 1);
    n.output("y");
    Graph gn = import_onnx_bytes(n.bytes(), "sm.onnx");
    EXPECT_EQ(gn.nodes.size(), 1u);
    EXPECT_EQ(gn.nodes[0].attr_int("axis", 0), 1);
  }
}

TEST(OnnxIoOpset, ReduceAxesInputStays) {
  ModelBuilder b(18);
  b.input("x", {2, 3});
  b.initializer("axes", Tensor::from_vector<int64_t>({1}, {1}));
  set_int(b.node("ReduceMean", {"x", "axes"}, {"y"}, "mean"), "keepdims", 0);
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "r.onnx");
  EXPECT_EQ(find_node(g, "ReduceMean").inputs.size(), 2u);
  expect_tensor_near(run_model(b.bytes(), {iota_f32({2, 3})}).at(0), {2}, {1, 4});
}

TEST(OnnxIoOpset, BatchNormLegacyAttributesDropped) {
  for (int opset : {6, 7, 9, 15}) {
    SCOPED_TRACE(opset);
    ModelBuilder b(opset);
    b.input("x", {1, 2, 1, 2});
    b.initializer("s", Tensor::from_vector<float>({2}, {1.f, 2.f}));
    b.initializer("b", Tensor::from_vector<float>({2}, {0.f, 1.f}));
    b.initializer("m", Tensor::from_vector<float>({2}, {1.f, 0.f}));
    b.initializer("v", Tensor::from_vector<float>({2}, {4.f, 1.f}));
    auto& n = b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn");
    set_float(n, "epsilon", 0.f);
    if (opset < 7) {
      set_int(n, "is_test", 1);
      set_ints(n, "consumed_inputs", {0, 0, 0, 1, 1});
    }
    if (opset >= 7 && opset < 9) set_int(n, "spatial", 1);
    if (opset >= 14) set_int(n, "training_mode", 0);
    b.output("y");
    const Node& bn = find_node(import_onnx_bytes(b.bytes(), "bn.onnx"), "BatchNormalization");
    for (const char* a : {"is_test", "consumed_inputs", "spatial", "training_mode"})
      EXPECT_FALSE(bn.has_attr(a)) << a;
    expect_tensor_near(run_model(b.bytes(), {iota_f32({1, 2, 1, 2}, 1.f)}).at(0), {1, 2, 1, 2},
                       {0.f, 0.5f, 7.f, 9.f});
  }
  ModelBuilder t(15);
  t.input("x", {1, 2});
  for (const char* w : {"s", "b", "m", "v"}) t.initializer(w, iota_f32({2}, 1.f));
  set_int(t.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn_train"),
          "training_mode", 1);
  t.output("y");
  expect_error([&] { import_onnx_bytes(t.bytes(), "t.onnx"); }, ErrorKind::kUnsupported,
               {"bn_train", "training_mode"});
}

TEST(OnnxIoOpset, DropoutRatioAttributeDropped) {
  ModelBuilder b(10);
  b.input("x", {3});
  set_float(b.node("Dropout", {"x"}, {"y"}, "drop"), "ratio", 0.3f);
  b.output("y");
  EXPECT_FALSE(find_node(import_onnx_bytes(b.bytes(), "d.onnx"), "Dropout").has_attr("ratio"));
  expect_tensor_near(run_model(b.bytes(), {iota_f32({3})}).at(0), {3}, {0, 1, 2});
}

TEST(OnnxIoOpset, LegacyBroadcastWithAxis) {
  ModelBuilder b(6);
  b.input("x", {2, 3, 2});
  b.initializer("c", Tensor::from_vector<float>({3}, {100.f, 200.f, 300.f}));
  auto& n = b.node("Add", {"x", "c"}, {"y"}, "add");
  set_int(n, "broadcast", 1);
  set_int(n, "axis", 1);
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "lb.onnx");
  EXPECT_FALSE(find_node(g, "Add").has_attr("broadcast"));
  EXPECT_FALSE(find_node(g, "Add").has_attr("axis"));
  expect_tensor_near(run_model(b.bytes(), {iota_f32({2, 3, 2})}).at(0), {2, 3, 2},
                     {100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311});
  // Trailing alignment (no axis) is plain NumPy broadcasting.
  ModelBuilder s(6);
  s.input("x", {2, 2});
  s.initializer("c", Tensor::from_vector<float>({2}, {10.f, 20.f}));
  set_int(s.node("Mul", {"x", "c"}, {"y"}, "mul"), "broadcast", 1);
  s.output("y");
  expect_tensor_near(run_model(s.bytes(), {iota_f32({2, 2})}).at(0), {2, 2}, {0, 20, 20, 60});
  // Gemm's broadcast attribute is dropped.
  ModelBuilder m(6);
  m.input("a", {1, 2});
  m.initializer("w", iota_f32({2, 2}));
  m.initializer("bias", Tensor::from_vector<float>({2}, {1.f, -1.f}));
  set_int(m.node("Gemm", {"a", "w", "bias"}, {"y"}, "gemm"), "broadcast", 1);
  m.output("y");
  EXPECT_FALSE(find_node(import_onnx_bytes(m.bytes(), "g.onnx"), "Gemm").has_attr("broadcast"));
  expect_tensor_near(run_model(m.bytes(), {iota_f32({1, 2}, 1.f)}).at(0), {1, 2}, {5, 6});
}

TEST(OnnxIoOpset, LegacyPReluSlopeIsPerChannel) {
  ModelBuilder b(6);
  b.input("x", {1, 2, 2});
  b.initializer("slope", Tensor::from_vector<float>({2}, {0.5f, 2.f}));
  b.node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  b.output("y");
  expect_tensor_near(run_model(b.bytes(), {iota_f32({1, 2, 2}, -2.f)}).at(0), {1, 2, 2},
                     {-1.f, -0.5f, 0.f, 1.f});
}

TEST(OnnxIoOpset, ReshapeShapeAttributeAndCastString) {
  ModelBuilder b(4);
  b.input("x", {2, 3});
  set_ints(b.node("Reshape", {"x"}, {"r"}, "reshape"), "shape", {3, 2});
  set_string(b.node("Cast", {"r"}, {"y"}, "cast"), "to", "FLOAT");
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "rs.onnx");
  EXPECT_EQ(find_node(g, "Reshape").inputs.size(), 2u);
  EXPECT_EQ(find_node(g, "Cast").attr_int("to", 0), onnx::TensorProto::FLOAT);
  EXPECT_EQ(run_model(b.bytes(), {iota_f32({2, 3})}).at(0).shape(), (Shape{3, 2}));
}

TEST(OnnxIoOpset, ConcatAxisDefaultsToOneBeforeOpset4) {
  ModelBuilder b(3);
  b.input("x", {1, 2});
  b.input("z", {1, 2});
  b.node("Concat", {"x", "z"}, {"y"}, "cat");
  b.output("y");
  const auto out = run_model(b.bytes(), {iota_f32({1, 2}), iota_f32({1, 2}, 5.f)});
  expect_tensor_near(out.at(0), {1, 4}, {0, 1, 5, 6});
}

TEST(OnnxIoOpset, SplitNumOutputsOfOpset18) {
  ModelBuilder b(18);
  b.input("x", {4});
  set_int(b.node("Split", {"x"}, {"a", "c"}, "split"), "num_outputs", 2);
  b.output("a");
  b.output("c");
  EXPECT_FALSE(find_node(import_onnx_bytes(b.bytes(), "s.onnx"), "Split").has_attr("num_outputs"));
  const auto out = run_model(b.bytes(), {iota_f32({4})});
  expect_tensor_near(out.at(1), {2}, {2, 3});
}

TEST(OnnxIo, DuplicateAndMissingNodeNamesAreMadeUnique) {
  ModelBuilder b(13);
  b.input("x", {2});
  b.node("Relu", {"x"}, {"a"}, "same");
  b.node("Neg", {"a"}, {"c"}, "same");
  b.node("Neg", {"c"}, {"d"});
  b.node("Relu", {"d"}, {"y"});
  b.output("y");
  Graph g = import_onnx_bytes(b.bytes(), "names.onnx");
  std::set<std::string> names;
  for (const Node& n : g.nodes) {
    EXPECT_FALSE(n.name.empty());
    names.insert(n.name);
  }
  EXPECT_EQ(names.size(), 4u);
  expect_tensor_near(run_model(b.bytes(), {Tensor::from_vector<float>({2}, {-1.f, 2.f})}).at(0),
                     {2}, {0.f, 2.f});
}

TEST(OnnxIo, OtherDomainsOnlyIsUnsupportedNotInvalid) {
  // Like ONNX's training-op tests: opset_import lists only a non-default domain.
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* o = m.add_opset_import();
  o->set_domain("ai.onnx.preview.training");
  o->set_version(1);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(2);
  auto* n = g->add_node();
  n->set_op_type("Adagrad");
  n->set_domain("ai.onnx.preview.training");
  n->set_name("step");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  std::string s;
  m.SerializeToString(&s);
  expect_error([&] { import_onnx_bytes(s, "train.onnx"); }, ErrorKind::kUnsupported,
               {"step", "ai.onnx.preview.training"});
  // A default-domain node without a default-domain opset is invalid.
  n->clear_domain();
  m.SerializeToString(&s);
  expect_error([&] { import_onnx_bytes(s, "train.onnx"); }, ErrorKind::kInvalidInput,
               {"step", "opset_import"});
}

TEST(OnnxIoOpset, TopKAttributeBecomesInput) {
  if (!find_op_schema("TopK")) GTEST_SKIP() << "dlas has no TopK op";
  ModelBuilder t(9);
  t.input("x", {5});
  set_int(t.node("TopK", {"x"}, {"v", "i"}, "topk"), "k", 2);
  t.output("v");
  t.output("i", kInt64);
  Graph gt = import_onnx_bytes(t.bytes(), "topk.onnx");
  const Node& k = gt.nodes.at(0);
  ASSERT_EQ(k.inputs.size(), 2u);
  EXPECT_FALSE(k.has_attr("k"));
  EXPECT_EQ(gt.constant(k.inputs[1])->to_int64_vector(), (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace dlas

namespace dlas {
namespace {

// Export picks the opset the graph needs and writes reduction axes in that opset's form;
// re-importing the export must give the same outputs and a valid opset for every node.
onnx::ModelProto reexport(const std::string& bytes) {
  Graph g = import_onnx_bytes(bytes, "in.onnx");
  fold_constants(g);
  onnx::ModelProto out;
  EXPECT_TRUE(out.ParseFromString(export_onnx_bytes(g)));
  return out;
}

TEST(OnnxIoExport, ReductionAxesFollowTheExportOpset) {
  // Opset 18 ReduceMean (axes input) and opset 11 ReduceSum (axes attribute) both
  // export at opset 13: ReduceMean with an attribute, ReduceSum with an input.
  ModelBuilder m18(18);
  m18.input("x", {2, 3, 4}).output("y").initializer("axes", Tensor::from_vector<int64_t>({1}, {1}));
  m18.node("ReduceMean", {"x", "axes"}, {"y"}, "mean");
  ModelBuilder m11(11);
  m11.input("x", {2, 3, 4}).output("y");
  set_ints(m11.node("ReduceSum", {"x"}, {"y"}, "sum"), "axes", {2});
  for (ModelBuilder* m : {&m18, &m11}) {
    const onnx::ModelProto out = reexport(m->bytes());
    ASSERT_EQ(out.opset_import_size(), 1);
    EXPECT_EQ(out.opset_import(0).version(), 13);
    const onnx::NodeProto& n = out.graph().node(0);
    if (n.op_type() == "ReduceMean") {
      EXPECT_EQ(n.input_size(), 1);
      ASSERT_EQ(n.attribute_size(), 1);
      EXPECT_EQ(n.attribute(0).name(), "axes");
    } else {
      EXPECT_EQ(n.input_size(), 2);
      for (const auto& a : n.attribute()) EXPECT_NE(a.name(), "axes");
    }
    const Tensor x = iota_f32({2, 3, 4});
    std::string again;
    ASSERT_TRUE(out.SerializeToString(&again));
    const Tensor want = run_model(m->bytes(), {x})[0];
    const Tensor got = run_model(again, {x})[0];
    EXPECT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.to_float_vector(), want.to_float_vector());
  }
}

TEST(OnnxIoExport, LayerNormalizationExportsAtOpset17) {
  ModelBuilder m(17);
  m.input("x", {2, 4}).output("y");
  m.initializer("scale", iota_f32({4}, 1.f)).initializer("bias", iota_f32({4}, -1.f));
  m.node("LayerNormalization", {"x", "scale", "bias"}, {"y"}, "ln");
  const onnx::ModelProto out = reexport(m.bytes());
  EXPECT_EQ(out.opset_import(0).version(), 17);
  ModelBuilder plain(13);
  plain.input("x", {2, 4}).output("y");
  plain.node("Relu", {"x"}, {"y"}, "relu");
  EXPECT_EQ(reexport(plain.bytes()).opset_import(0).version(), 13);
}

}  // namespace
}  // namespace dlas
