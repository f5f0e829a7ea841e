// The layer rule: a layer includes only its own headers and the public headers of the
// layers below it. The dependency table is the one in CMakeLists.txt (set(DLAS_BELOW_<layer>
// ...)), which also builds each layer against a view holding only those headers; this test
// reads that same table and checks every include in src/ and include/dlas/ against it, so a
// file the build does not compile (a header nobody includes yet) is checked too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Table = std::map<std::string, std::set<std::string>>;

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// DLAS_BELOW_<layer> lists from CMakeLists.txt.
Table layer_table() {
  const std::string text = read(fs::path(DLAS_SOURCE_DIR) / "CMakeLists.txt");
  const std::regex set_re(R"(set\(DLAS_BELOW_([a-z]+)([^)]*)\))");
  Table t;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), set_re);
       it != std::sregex_iterator(); ++it) {
    std::set<std::string>& below = t[(*it)[1]];
    std::istringstream words((*it)[2]);
    for (std::string w; words >> w;) below.insert(w);
  }
  return t;
}

// The includes of `text` (a file of `layer`) that break the rule, as "line: reason".
std::vector<std::string> violations(const Table& t, const std::string& layer,
                                    const std::string& text) {
  static const std::regex inc_re(R"(^\s*#\s*include\s*([<"])([^">]+)[">])");
  std::vector<std::string> bad;
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    std::smatch m;
    if (!std::regex_search(line, m, inc_re)) continue;
    const std::string path = m[2];
    const bool public_header = path.rfind("dlas/", 0) == 0;
    const std::string rest = public_header ? path.substr(5) : path;
    const std::string top = rest.substr(0, rest.find('/'));
    if (rest.find('/') == std::string::npos || !t.count(top) || top == layer) continue;
    if (public_header && t.at(layer).count(top)) continue;
    if (!public_header && m[1] == "<") continue;  // a system header that shares a layer's name
    bad.push_back(std::to_string(n) + ": " + path +
                  (public_header ? " (a layer above or beside " + layer + ")"
                                 : " (another layer's private header)"));
  }
  return bad;
}

TEST(Layers, TableIsClosedAndCoversEveryFolder) {
  const Table t = layer_table();
  ASSERT_GE(t.size(), 9u) << "DLAS_BELOW_<layer> lists not found in CMakeLists.txt";
  for (const auto& [layer, below] : t) {
    EXPECT_FALSE(below.count(layer)) << layer << " lists itself";
    for (const std::string& b : below) {
      ASSERT_TRUE(t.count(b)) << layer << " lists an unknown layer " << b;
      for (const std::string& bb : t.at(b))
        EXPECT_TRUE(below.count(bb)) << layer << " is above " << b << " but does not list " << bb
                                     << " (each list is the whole set below)";
    }
  }
  for (const char* root : {"src", "include/dlas"})
    for (const auto& e : fs::directory_iterator(fs::path(DLAS_SOURCE_DIR) / root))
      if (e.is_directory()) {
        EXPECT_TRUE(t.count(e.path().filename().string()))
            << root << "/" << e.path().filename().string() << " is not a layer in the table";
      }
}

TEST(Layers, NoIncludeGoesUpOrIntoAnotherLayersPrivateHeaders) {
  const Table t = layer_table();
  ASSERT_FALSE(t.empty());
  std::vector<std::string> bad;
  int files = 0;
  for (const char* root : {"src", "include/dlas"}) {
    const fs::path base = fs::path(DLAS_SOURCE_DIR) / root;
    for (const auto& e : fs::recursive_directory_iterator(base)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".inc")) continue;
      const std::string layer = (*fs::relative(e.path(), base).begin()).string();
      if (!t.count(layer)) continue;  // reported by the test above
      ++files;
      for (const std::string& v : violations(t, layer, read(e.path())))
        bad.push_back(fs::relative(e.path(), DLAS_SOURCE_DIR).string() + ":" + v);
    }
  }
  EXPECT_GT(files, 100);
  std::string all;
  for (const std::string& b : bad) all += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << bad.size() << " include(s) break the layer rule:" << all;
}

// The check itself catches what it should (so the test above cannot pass vacuously).
TEST(Layers, CheckFlagsUpwardAndPrivateIncludes) {
  const Table t = layer_table();
  ASSERT_TRUE(t.count("algo") && t.count("system"));
  EXPECT_TRUE(violations(t, "algo",
                         "#include \"dlas/algo/conv.h\"\n#include \"dlas/hw/isa.h\"\n"
                         "#include <vector>\n#include \"algo/conv/conv_impl.h\"\n")
                  .empty());
  EXPECT_EQ(violations(t, "algo", "#include \"dlas/system/plan.h\"\n").size(), 1u);
  EXPECT_EQ(violations(t, "algo", "  #  include \"dlas/model/graph.h\"\n").size(), 1u);
  EXPECT_EQ(violations(t, "system", "#include \"algo/conv/conv_impl.h\"\n").size(), 1u);
  EXPECT_EQ(violations(t, "model", "#include \"dlas/hw/isa.h\"\n").size(), 1u);  // beside
  EXPECT_TRUE(violations(t, "system", "#include \"dlas/model/graph.h\"\n").empty());
}

}  // namespace
