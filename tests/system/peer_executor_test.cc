// The ONNX peers as Executors (dlas/system/peer_executor.h): where ONNX Runtime is
// installed (scripts/peers-setup.sh), a small zoo model run through it matches dlas's
// reference runtime, and the latency protocol runs in the peer's process; where it is not,
// building one is kUnsupported naming the fix. Skips the first part without the peer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "dlas/core/error.h"
#include "dlas/model/zoo.h"
#include "dlas/system/make_executor.h"
#include "dlas/system/measure.h"
#include "dlas/system/peer_executor.h"

namespace dlas {
namespace {

Graph tiny_model() {
  ZooOptions z;
  z.width_mult = 0.25;
  z.image_size = 16;
  Graph g = build_zoo_model("mobilenetv2-cifar", z);
  g.infer();
  return g;
}

TEST(PeerExecutor, EveryPeerIsABackend) {
  const std::vector<std::string> known = executor_backends();
  for (const std::string& p : peer_backends()) {
    EXPECT_TRUE(std::find(known.begin(), known.end(), p) != known.end()) << p;
    EXPECT_TRUE(is_peer_backend(p));
  }
  EXPECT_FALSE(is_peer_backend("dlas"));
  EXPECT_FALSE(is_peer_backend("onednn"));
}

TEST(PeerExecutor, MissingPeerIsUnsupportedWithTheFix) {
  ::setenv("DLAS_PEERS_VENV", "/nonexistent/venv", 1);
  try {
    PeerExecutor e(tiny_model(), "openvino", 1);
    ADD_FAILURE() << "a peer without an environment was built";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("scripts/peers-setup.sh"), std::string::npos) << e.what();
  }
  ::unsetenv("DLAS_PEERS_VENV");
}

TEST(PeerExecutor, OnnxRuntimeMatchesTheReferenceAndTimesItself) {
  if (const std::string why = peer_unavailable_reason("onnxruntime"); !why.empty())
    GTEST_SKIP() << why;
  const Graph g = tiny_model();
  Variant v;
  v.backend = "onnxruntime";
  v.threads = 1;
  const std::unique_ptr<Executor> peer = make_executor(g, v);
  EXPECT_EQ(peer->name(), "onnxruntime");
  EXPECT_EQ(peer->threads(), 1);
  EXPECT_GE(dynamic_cast<PeerExecutor&>(*peer).compile_ms(), 0);
  Tensor x(DType::kF32, g.inputs[0].shape);
  float* xd = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) xd[i] = static_cast<float>(std::sin(0.37 * i));
  const Tensor got = peer->run({x})[0];
  const Tensor want = ReferenceExecutor(g).run({x})[0];
  ASSERT_EQ(got.shape(), want.shape());
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err = std::max(err, std::abs(got.get_as_double(i) - want.get_as_double(i)));
    scale = std::max(scale, std::abs(want.get_as_double(i)));
  }
  EXPECT_LE(err, 1e-4 * scale) << "max |onnxruntime - reference| " << err << " of " << scale;

  LatencyOptions lo;
  lo.repeat = 7;
  lo.warmup = 2;
  const LatencyStats s = measure_latency(*peer, {x}, lo);
  EXPECT_EQ(s.times_ms.size(), 7u);
  EXPECT_GT(s.median_ms, 0);
  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.max_ms);
}

}  // namespace
}  // namespace dlas
