// Writes bench/shapes/<model>.txt for every zoo model: the unique conv layer shapes the
// conv microbenchmarks (bench/conv_bench.cc) run. Regenerate after a zoo change:
//
//   build/dlas_gen_shapes [out_dir]     (default: the source tree's bench/shapes)
#include <cstdio>
#include <string>

#include "dlas/core/error.h"
#include "dlas/core/file.h"
#include "dlas/model/zoo.h"
#include "dlas/system/conv_shapes.h"

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : DLAS_SOURCE_DIR "/bench/shapes";
  try {
    for (const dlas::ZooEntry& e : dlas::zoo_models()) {
      const std::string path = dir + "/" + e.name + ".txt";
      dlas::write_file_atomic(path, dlas::zoo_conv_shape_list(e.name));
      std::printf("%s\n", path.c_str());
    }
  } catch (const dlas::Error& err) {
    std::fprintf(stderr, "dlas_gen_shapes: %s\n", err.what());
    return 1;
  }
  return 0;
}
