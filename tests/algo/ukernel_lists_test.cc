// Test-only rows (the T entries of a family's list: another path's vector logic compiled
// for a machine that lacks that path) reach no production table, default or lookup, so
// neither the auto rules nor the tuner can select them; the tests still run them.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.h"
#include "algo/microkernels/f32-dwconv/f32_dwconv.h"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.h"
#include "algo/microkernels/f32-nchwc/f32_nchwc.h"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.h"
#include "algo/microkernels/f32-spack/f32_spack.h"
#include "algo/microkernels/f32-sspack/f32_sspack.h"
#include "algo/microkernels/f32-wino/f32_wino.h"

namespace dlas::test {
namespace {

// The T rows of every list, read from the lists themselves.
std::set<std::string> test_only_names() {
  std::set<std::string> names;
#define X(name, isa, lanes, ...)
#define T(name, isa, lanes, ...) names.insert(#name);
#include "algo/microkernels/bf16-dwnchwc/bf16_dwnchwc.inc"
#include "algo/microkernels/f32-dwconv/f32_dwconv.inc"
#include "algo/microkernels/f32-dwnchwc/f32_dwnchwc.inc"
#include "algo/microkernels/f32-nchwc/f32_nchwc.inc"
#include "algo/microkernels/f32-poolnchwc/f32_poolnchwc.inc"
#include "algo/microkernels/f32-spack/f32_spack.inc"
#include "algo/microkernels/f32-sspack/f32_sspack.inc"
#include "algo/microkernels/f32-wino/f32_wino.inc"
#undef T
#undef X
  return names;
}

// f32 lanes one vector register of the path holds.
int register_lanes(Isa isa) {
  const Isa base = base_isa(isa);
  return base == Isa::kAvx512 ? 16 : base == Isa::kAvx2 ? 8 : 1;
}

template <class Table>
void expect_production(const Table& table, const std::set<std::string>& test_only) {
  for (const auto& u : table) {
    EXPECT_EQ(test_only.count(u.name), 0u) << u.name << " is a test-only row";
    // The scalar sets use portable GCC vectors of any width; a vector path's row fits it.
    if (u.isa != Isa::kScalar) {
      EXPECT_LE(u.lanes, register_lanes(u.isa)) << u.name;
    }
  }
}

TEST(UkernelLists, ProductionTablesHaveNoTestOnlyRow) {
  const std::set<std::string> test_only = test_only_names();
  EXPECT_FALSE(test_only.empty());
  expect_production(ukernel::f32_spack_ukernels(), test_only);
  expect_production(ukernel::f32_sspack_ukernels(), test_only);
  expect_production(ukernel::f32_wino_ukernels(), test_only);
  expect_production(ukernel::f32_nchwc_ukernels(), test_only);
  expect_production(ukernel::f32_dwnchwc_ukernels(), test_only);
  expect_production(ukernel::bf16_dwnchwc_ukernels(), test_only);
  expect_production(ukernel::f32_poolnchwc_ukernels(), test_only);
  for (Isa isa : kAllIsas) {
    for (int lanes : {8, 16})
      if (const ukernel::F32NchwcUkernels* set = ukernel::f32_nchwc_for(isa, lanes)) {
        EXPECT_EQ(test_only.count(set->name), 0u) << isa_name(isa) << " lanes " << lanes;
      }
    for (int lanes : {8, 16}) {
      if (const ukernel::F32DwNchwcUkernels* set = ukernel::f32_dwnchwc_for(isa, lanes)) {
        EXPECT_EQ(test_only.count(set->name), 0u) << isa_name(isa) << " lanes " << lanes;
      }
      if (const ukernel::F32PoolNchwcUkernels* set = ukernel::f32_poolnchwc_for(isa, lanes)) {
        EXPECT_EQ(test_only.count(set->name), 0u) << isa_name(isa) << " lanes " << lanes;
      }
    }
    if (const ukernel::Bf16DwNchwcUkernels* set = ukernel::bf16_dwnchwc_for(isa)) {
      EXPECT_EQ(test_only.count(set->name), 0u) << isa_name(isa);
    }
    EXPECT_EQ(test_only.count(ukernel::f32_spack_default(isa).name), 0u) << isa_name(isa);
    EXPECT_EQ(test_only.count(ukernel::f32_wino_default(isa).name), 0u) << isa_name(isa);
    EXPECT_NE(&ukernel::f32_dwconv_for(isa), &ukernel::f32_dwconv_16lane__avx2) << isa_name(isa);
    for (int vc : {4, 8, 16, 32}) {
      const ukernel::F32SspackUkernels* set = ukernel::find_f32_sspack(isa, vc);
      if (set) {
        EXPECT_EQ(test_only.count(set->name), 0u) << isa_name(isa) << " vc " << vc;
      }
    }
  }
}

TEST(UkernelLists, TestOnlyTablesHoldExactlyTheTestOnlyRows) {
  const std::set<std::string> test_only = test_only_names();
  std::set<std::string> tabled = {"f32_dwconv_16lane__avx2"};
  for (const auto& u : ukernel::f32_spack_test_only_ukernels()) tabled.insert(u.name);
  for (const auto& u : ukernel::f32_sspack_test_only_ukernels()) tabled.insert(u.name);
  for (const auto& u : ukernel::f32_wino_test_only_ukernels()) tabled.insert(u.name);
  for (const auto& u : ukernel::f32_nchwc_test_only_ukernels()) tabled.insert(u.name);
  for (const auto& u : ukernel::f32_dwnchwc_test_only_ukernels()) tabled.insert(u.name);
  for (const auto& u : ukernel::bf16_dwnchwc_test_only_ukernels()) tabled.insert(u.name);
  for (const auto& u : ukernel::f32_poolnchwc_test_only_ukernels()) tabled.insert(u.name);
  EXPECT_EQ(tabled, test_only);
}

}  // namespace
}  // namespace dlas::test
