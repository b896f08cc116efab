//===- ResourceListTest.cpp - A link's resources, inline or spilled -------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "ccsynth/Topology/Topology.h"

#include <catch2/catch.hpp>

#include <utility>
#include <vector>

using namespace ccsynth;

namespace {

std::vector<int> items(const ResourceList &l) {
  return std::vector<int>(l.begin(), l.end());
}

} // namespace

TEST_CASE("a resource list keeps its ids inline and past the inline room",
          "[topology]") {
  ResourceList small{3, 1};
  CHECK(items(small) == std::vector<int>{3, 1});
  CHECK(small.front() == 3);
  CHECK(small.back() == 1);

  std::vector<int> many;
  ResourceList big;
  for (int i = 0; i < 3 * (int)ResourceList::kInline + 1; ++i) {
    big.push_back(100 + i);
    many.push_back(100 + i);
    REQUIRE(items(big) == many);
  }
  CHECK(big.size() == many.size());
  CHECK(ResourceList(many) == big);

  // Copies are deep, moves leave the source empty and usable.
  ResourceList copy = big;
  copy[0] = -1;
  CHECK(big[0] == 100);
  ResourceList moved = std::move(copy);
  CHECK(copy.empty());
  CHECK(moved[0] == -1);
  copy.push_back(7);
  CHECK(items(copy) == std::vector<int>{7});

  // Assignment in both directions between inline and spilled lists.
  small = big;
  CHECK(small == big);
  big = ResourceList{5};
  CHECK(items(big) == std::vector<int>{5});
  small = std::move(big);
  CHECK(items(small) == std::vector<int>{5});
  const ResourceList &same = small;
  small = same;
  CHECK(items(small) == std::vector<int>{5});
}
