// Dataset loaders on tiny generated files: IDX (raw and gzip), CIFAR-10/100, image folders
// (PNG/JPEG, grey/RGB/RGBA), synthetic data; corrupt and truncated files in every format give
// one kInvalidInput naming the file (and the record where one is bad).
#include <cmath>
#include <set>

#include "data_test_util.h"

namespace dlas::test {
namespace {

using data::open_dataset;
using data::Split;

Bytes image_of(const data::Dataset& ds, int64_t i) {
  const auto& in = ds.info();
  Bytes b(static_cast<size_t>(in.channels * in.height * in.width));
  ds.image_u8(i, b.data());
  return b;
}

using IdxTest = DataTest;

TEST_F(IdxTest, RawAndGzipGiveTheSameRecords) {
  write_idx_dir(sub("raw"), false);
  write_idx_dir(sub("gz"), true);
  for (const char* kind : {"raw", "gz"}) {
    SCOPED_TRACE(kind);
    const auto train = open_dataset("mnist:" + (dir_ / kind).string(), Split::kTrain);
    const auto test = open_dataset("fashion-mnist:" + (dir_ / kind).string(), Split::kTest);
    ASSERT_EQ(train->size(), 6);
    ASSERT_EQ(test->size(), 4);
    EXPECT_EQ(train->info().channels, 1);
    EXPECT_EQ(train->info().height, 4);
    EXPECT_EQ(train->info().width, 3);
    EXPECT_EQ(train->info().classes, 10);
    EXPECT_EQ(test->info().class_names.at(9), "Ankle boot");
    EXPECT_EQ(train->info().class_names.at(9), "9");
    for (int64_t i = 0; i < 6; ++i) {
      EXPECT_EQ(train->label(i), (i * 3) % 10);
      const Bytes img = image_of(*train, i);
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 3; ++x) ASSERT_EQ(img[y * 3 + x], test_pixel(i, y, x));
    }
  }
}

TEST_F(IdxTest, CorruptFilesNameTheFileAndRecord) {
  const std::string d = sub("bad");
  const auto img = fs::path(d) / "train-images-idx3-ubyte";
  const auto lbl = fs::path(d) / "train-labels-idx1-ubyte";
  const auto open = [&] { open_dataset("mnist:" + d, Split::kTrain); };
  write_bytes(lbl, idx_labels(5));
  Bytes good = idx_images(5, 4, 3);

  expect_invalid(open, {"train-images-idx3-ubyte", "no such file"});

  Bytes b = good;
  b.resize(good.size() - 20);  // 3 whole images + 4 bytes of the 4th
  write_bytes(img, b);
  expect_invalid(open, {"train-images-idx3-ubyte", "truncated at image 3"});

  b = good;
  b[0] = 0x12;
  write_bytes(img, b);
  expect_invalid(open, {"train-images-idx3-ubyte", "magic"});

  b = good;
  b[2] = 0x0d;  // float data
  write_bytes(img, b);
  expect_invalid(open, {"train-images-idx3-ubyte", "not u8"});

  b = good;
  b[3] = 2;
  write_bytes(img, b);
  expect_invalid(open, {"train-images-idx3-ubyte", "dimensions"});

  b = good;
  b.push_back(1);
  write_bytes(img, b);
  expect_invalid(open, {"train-images-idx3-ubyte", "1 bytes after the last image"});

  write_bytes(img, Bytes{0, 0, 8});
  expect_invalid(open, {"train-images-idx3-ubyte", "truncated IDX header"});

  write_bytes(img, good);
  write_bytes(lbl, idx_labels(4));
  expect_invalid(open, {"train-labels-idx1-ubyte", "4 labels for 5 images"});

  Bytes l = idx_labels(5);
  l.back() = 10;
  write_bytes(lbl, l);
  expect_invalid(open, {"train-labels-idx1-ubyte", "label 10 of record 4"});

  // gzip: a truncated stream and a corrupt one.
  write_bytes(lbl, idx_labels(5));
  fs::remove(img);
  Bytes z = gzip(good);
  Bytes zt(z.begin(), z.begin() + static_cast<std::ptrdiff_t>(z.size() / 2));
  write_bytes(fs::path(d) / "train-images-idx3-ubyte.gz", zt);
  expect_invalid(open, {"train-images-idx3-ubyte.gz", "gzip"});
  Bytes zc = z;
  for (size_t i = 12; i < zc.size() - 8; ++i) zc[i] ^= 0x5a;
  write_bytes(fs::path(d) / "train-images-idx3-ubyte.gz", zc);
  expect_invalid(open, {"train-images-idx3-ubyte.gz", "gzip"});

  expect_invalid([&] { open_dataset("mnist:" + d + "/nope", Split::kTrain); }, {"nope"});
  expect_invalid([&] { open_dataset("imagenet-full", Split::kTrain); },
                 {"unknown dataset 'imagenet-full'", "fashion-mnist"});
}

TEST(FashionMnist, DebianDatasetReadsAndLoads) {
  if (!fs::is_directory("/usr/share/datasets/fashion-mnist"))
    GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const auto ds = open_dataset("fashion-mnist", Split::kTest);
  ASSERT_EQ(ds->size(), 10000);
  EXPECT_EQ(ds->info().height, 28);
  EXPECT_EQ(ds->info().width, 28);
  data::Loader loader(*ds, data::default_preprocess(ds->info(), false),
                      {.batch = 100, .limit = 300});
  data::Batch b;
  std::set<int> labels;
  double sum = 0;
  int64_t n = 0;
  while (loader.next(b)) {
    EXPECT_EQ(b.images.shape(), (Shape{100, 1, 28, 28}));
    labels.insert(b.labels.begin(), b.labels.end());
    for (int64_t i = 0; i < b.images.numel(); ++i) sum += b.images.data<float>()[i];
    n += b.images.numel();
  }
  EXPECT_EQ(labels.size(), 10u);
  EXPECT_NEAR(sum / n, 0.0, 0.15);  // normalized with the training set's mean/std
}

using CifarTest = DataTest;

TEST_F(CifarTest, Cifar10BatchesAndCifar100FineLabels) {
  const std::string d10 = sub("c10/cifar-10-batches-bin");
  for (int k = 1; k <= 5; ++k)
    write_bytes(fs::path(d10) / ("data_batch_" + std::to_string(k) + ".bin"),
                cifar_records(2, 1, 2 * (k - 1)));
  write_bytes(fs::path(d10) / "test_batch.bin", cifar_records(3, 1));
  write_bytes(fs::path(d10) / "batches.meta.txt",
              Bytes{'a',  '\n', 'b',  '\n', 'c',  '\n', 'd',  '\n', 'e',  '\n', 'f',
                    '\n', 'g',  '\n', 'h',  '\n', 'i',  '\n', 'j',  '\n', '\n'});
  // The parent folder works too (the archive's layout).
  const auto train = open_dataset("cifar10:" + (dir_ / "c10").string(), Split::kTrain);
  const auto test = open_dataset("cifar10:" + d10, Split::kTest);
  ASSERT_EQ(train->size(), 10);
  ASSERT_EQ(test->size(), 3);
  EXPECT_EQ(train->info().channels, 3);
  EXPECT_EQ(train->info().classes, 10);
  EXPECT_EQ(train->info().class_names.at(9), "j");
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(train->label(i), (i * 7) % 10);
    const Bytes img = image_of(*train, i);
    EXPECT_EQ(img[0], test_pixel(i, 0, 0));
    EXPECT_EQ(img[2 * 1024 + 31 * 32 + 5], test_pixel(i, 2 * 32 + 31, 5));
  }
  const std::string d100 = sub("c100");
  write_bytes(fs::path(d100) / "train.bin", cifar_records(4, 2));
  write_bytes(fs::path(d100) / "test.bin", gzip(cifar_records(2, 2)));  // gzip'd also reads
  const auto c100 = open_dataset("cifar100:" + d100, Split::kTrain);
  ASSERT_EQ(c100->size(), 4);
  EXPECT_EQ(c100->info().classes, 100);
  EXPECT_EQ(c100->label(3), 21);  // the fine label, not the coarse one (3)
  EXPECT_EQ(image_of(*c100, 3)[7], test_pixel(3, 0, 7));
  EXPECT_EQ(open_dataset("cifar100:" + d100, Split::kTest)->size(), 2);
}

TEST_F(CifarTest, CorruptBatchesNameTheFileAndRecord) {
  const std::string d = sub("c10");
  const auto open = [&] { open_dataset("cifar10:" + d, Split::kTest); };
  expect_invalid(open, {"test_batch.bin", "no such file"});
  Bytes b = cifar_records(3, 1);
  b.resize(b.size() - 100);
  write_bytes(fs::path(d) / "test_batch.bin", b);
  expect_invalid(open, {"test_batch.bin", "truncated at record 2"});
  b = cifar_records(3, 1);
  b[3073] = 12;
  write_bytes(fs::path(d) / "test_batch.bin", b);
  expect_invalid(open, {"test_batch.bin", "label 12 of record 1"});
  write_bytes(fs::path(d) / "test_batch.bin", cifar_records(3, 1));
  expect_invalid([&] { open_dataset("cifar10:" + d, Split::kTrain); }, {"data_batch_1.bin"});
  expect_invalid([&] { open_dataset("cifar10", Split::kTrain); }, {"cifar10:DIR"});
}

using FolderTest = DataTest;

Bytes gradient(int w, int h, int c, int seed) {
  Bytes b;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        b.push_back(static_cast<uint8_t>((seed * 10 + y * 8 + x * 6 + k * 40) % 256));
  return b;
}

TEST_F(FolderTest, ClassFoldersMixedFormatsConvertToTheFirstImagesShape) {
  const fs::path root = sub("imgs");
  write_png(root / "cat" / "a.png", 8, 6, 3, gradient(8, 6, 3, 0));  // first: RGB 6x8
  write_png(root / "cat" / "b.PNG", 8, 6, 1, gradient(8, 6, 1, 1));  // grey -> replicated
  write_png(root / "dog" / "c.png", 4, 3, 4, gradient(4, 3, 4, 2));  // RGBA, smaller -> resized
  write_jpeg(root / "dog" / "d.jpg", 8, 6, 3, gradient(8, 6, 3, 3));
  write_bytes(root / "dog" / "notes.txt", Bytes{'x'});  // not an image: ignored
  const auto ds = open_dataset("folder:" + root.string(), Split::kTrain);
  ASSERT_EQ(ds->size(), 4);
  EXPECT_EQ(ds->info().channels, 3);
  EXPECT_EQ(ds->info().height, 6);
  EXPECT_EQ(ds->info().width, 8);
  EXPECT_EQ(ds->info().class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(ds->label(0), 0);
  EXPECT_EQ(ds->label(3), 1);
  const Bytes rgb = gradient(8, 6, 3, 0);
  const Bytes a = image_of(*ds, 0);
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 8; ++x) ASSERT_EQ(a[(c * 6 + y) * 8 + x], rgb[(y * 8 + x) * 3 + c]);
  const Bytes grey = gradient(8, 6, 1, 1);
  const Bytes b = image_of(*ds, 1);
  EXPECT_EQ(b[0], grey[0]);
  EXPECT_EQ(b[2 * 48 + 5 * 8 + 7], grey[5 * 8 + 7]);
  const Bytes d = image_of(*ds, 3);  // JPEG at quality 98: close, not exact
  const Bytes drgb = gradient(8, 6, 3, 3);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(d[(c * 6 + 2) * 8 + 3], drgb[(2 * 8 + 3) * 3 + c], 12);
  (void)image_of(*ds, 2);  // RGBA, resized: decodes
}

TEST_F(FolderTest, LabelsFileAndSplitFolders) {
  const fs::path root = sub("set");
  write_png(root / "train" / "x" / "1.png", 5, 5, 1, gradient(5, 5, 1, 0));
  write_png(root / "train" / "y" / "2.png", 5, 5, 1, gradient(5, 5, 1, 1));
  write_png(root / "val" / "y" / "3.png", 7, 7, 3, gradient(7, 7, 3, 2));  // -> grey 5x5
  const auto train = open_dataset("folder:" + root.string(), Split::kTrain);
  const auto val = open_dataset("folder:" + root.string(), Split::kTest);
  EXPECT_EQ(train->size(), 2);
  ASSERT_EQ(val->size(), 1);
  EXPECT_EQ(val->info().channels, 1);
  EXPECT_EQ(val->info().height, 5);
  EXPECT_EQ(val->label(0), 1);  // "y" is class 1 in both splits
  (void)image_of(*val, 0);

  const fs::path flat = sub("flat");
  write_png(flat / "img" / "p.png", 4, 4, 3, gradient(4, 4, 3, 0));
  write_jpeg(flat / "img" / "q.jpg", 4, 4, 3, gradient(4, 4, 3, 1));
  write_bytes(flat / "labels.txt", Bytes{});
  std::ofstream(flat / "labels.txt") << "# path label\nimg/p.png zebra\n\nimg/q.jpg  ant\n";
  const auto ds = open_dataset("folder:" + flat.string(), Split::kTest);
  ASSERT_EQ(ds->size(), 2);
  EXPECT_EQ(ds->info().class_names, (std::vector<std::string>{"ant", "zebra"}));
  EXPECT_EQ(ds->label(0), 1);
  EXPECT_EQ(ds->label(1), 0);
  std::ofstream(flat / "labels.txt") << "img/p.png 3\nimg/q.jpg 0\n";
  EXPECT_EQ(open_dataset("folder:" + flat.string(), Split::kTest)->info().classes, 4);
  std::ofstream(flat / "labels.txt") << "img/p.png 3\nimg/missing.jpg 0\n";
  expect_invalid([&] { open_dataset("folder:" + flat.string(), Split::kTest); },
                 {"labels.txt:2", "missing.jpg"});
  std::ofstream(flat / "labels.txt") << "img/p.png\n";
  expect_invalid([&] { open_dataset("folder:" + flat.string(), Split::kTest); }, {"labels.txt:1"});
}

TEST_F(FolderTest, CorruptImagesNameTheFile) {
  const fs::path root = sub("imgs");
  write_png(root / "a" / "good.png", 6, 6, 3, gradient(6, 6, 3, 0));
  write_jpeg(root / "a" / "good.jpg", 16, 16, 3, gradient(16, 16, 3, 0));
  const Bytes png = read_bytes(root / "a" / "good.png");
  const Bytes jpg = read_bytes(root / "a" / "good.jpg");
  write_bytes(root / "b" / "short.png",
              Bytes(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(png.size() - 30)));
  write_bytes(root / "b" / "short.jpg",
              Bytes(jpg.begin(), jpg.begin() + static_cast<std::ptrdiff_t>(jpg.size() / 2)));
  write_bytes(root / "b" / "text.jpg", Bytes{'h', 'e', 'l', 'l', 'o'});
  Bytes crc = png;
  crc[40] ^= 0xff;
  write_bytes(root / "b" / "crc.png", crc);
  const auto ds = open_dataset("folder:" + root.string(), Split::kTrain);
  ASSERT_EQ(ds->size(), 6);
  // Sorted per class: a/good.jpg, a/good.png, b/crc.png, b/short.jpg, b/short.png, b/text.jpg
  (void)image_of(*ds, 0);
  (void)image_of(*ds, 1);
  expect_invalid([&] { image_of(*ds, 2); }, {"crc.png", "PNG"});
  expect_invalid([&] { image_of(*ds, 3); }, {"short.jpg", "JPEG"});
  expect_invalid([&] { image_of(*ds, 4); }, {"short.png", "PNG"});
  expect_invalid([&] { image_of(*ds, 5); }, {"text.jpg", "bad magic"});
  // Through the loader, on two threads: the same single error.
  data::Loader loader(*ds, data::Preprocess{}, {.batch = 6, .threads = 2});
  data::Batch b;
  expect_invalid([&] { loader.next(b); }, {"imgs/b/"});
  expect_invalid([&] { open_dataset("folder:" + (dir_ / "none").string(), Split::kTrain); },
                 {"none"});
}

TEST(Synthetic, DeterministicLearnableAndParsed) {
  const auto a = open_dataset("synthetic", Split::kTrain);
  const auto b = open_dataset("synthetic", Split::kTrain);
  const auto t = open_dataset("synthetic", Split::kTest);
  EXPECT_EQ(a->info().channels, 1);
  EXPECT_EQ(a->info().height, 28);
  EXPECT_EQ(a->info().classes, 10);
  EXPECT_EQ(a->size(), 512);
  EXPECT_EQ(image_of(*a, 17), image_of(*b, 17));
  EXPECT_NE(image_of(*a, 17), image_of(*t, 17));
  // Nearest class mean (fit on train, scored on test) separates the classes.
  const auto s = open_dataset("synthetic:3,8,8:4:200", Split::kTrain);
  const auto st = open_dataset("synthetic:3,8,8:4:200", Split::kTest);
  ASSERT_EQ(s->info().channels, 3);
  ASSERT_EQ(s->info().classes, 4);
  ASSERT_EQ(s->size(), 200);
  std::vector<std::vector<double>> mean(4, std::vector<double>(192, 0.0));
  for (int64_t i = 0; i < s->size(); ++i) {
    const Bytes img = image_of(*s, i);
    for (int k = 0; k < 192; ++k) mean[s->label(i)][k] += img[k] / 50.0;
  }
  int correct = 0;
  for (int64_t i = 0; i < st->size(); ++i) {
    const Bytes img = image_of(*st, i);
    int best = -1;
    double best_d = 1e300;
    for (int c = 0; c < 4; ++c) {
      double d = 0;
      for (int k = 0; k < 192; ++k) d += (img[k] - mean[c][k]) * (img[k] - mean[c][k]);
      if (d < best_d) best_d = d, best = c;
    }
    correct += best == st->label(i);
  }
  EXPECT_GT(correct, 180);
  expect_invalid([] { open_dataset("synthetic:3,8", Split::kTrain); }, {"C,H,W"});
  expect_invalid([] { open_dataset("synthetic:3,8,x", Split::kTrain); }, {"'x'"});
  expect_invalid([] { open_dataset("synthetic:1,8,8:0", Split::kTrain); }, {"classes"});
  expect_invalid([&] { image_of(*s, 200); }, {"out of range"});
}

}  // namespace
}  // namespace dlas::test
