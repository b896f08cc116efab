//===- Layout.h - Where a chunk slice lives, per pass ---------------------===//
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
// The tiling of one launch, shared by the host and device contexts. Each
// buffer of the NCCL call is `blocks` blocks of `count` elements; a block
// holds `blockChunks` chunks of C = count / blockChunks elements. Pass p of
// the body moves elements [p*T, min(C, (p+1)*T)) of every chunk (T = tile
// elements). When count is not a multiple of blockChunks, the R = count %
// blockChunks trailing elements of every block run through one more pass
// with chunks of one element, on staging copies in scratch.
//
// Scratch of a rank (bytes): schedule scratch (S x tile), landing (L x
// tile), then staging: 2 x (inBlocks + outBlocks) x blockChunks x 8. The
// staged output sits in the middle of staging; the staged input sits at
// the same block offset from it as the user's input from the user's output
// (in-place calls alias them as the user's buffers do).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ccsynth/runtime/Generated.h"

#include <cstddef>
#include <cstdint>

namespace ccsynth::rt {

/// Bytes of scratch a rank needs for `shape` with `tileBytes` per chunk.
CCSYNTH_HD constexpr std::uint64_t scratchBytes(const Shape &s,
                                                std::uint64_t tileBytes) {
  return std::uint64_t(s.scratchChunks + s.landingChunks) * tileBytes +
         16ull * std::uint64_t(s.inBlocks + s.outBlocks) * s.blockChunks;
}

struct Geometry {
  std::size_t count = 0;       ///< elements per block (NCCL's count)
  std::size_t blockChunks = 1; ///< K
  std::size_t chunkElems = 0;  ///< C = count / K
  std::size_t remainder = 0;   ///< R = count % K
  std::size_t tileElems = 1;   ///< T
  std::size_t tileBytes = 0;
  int bodyPasses = 0;
  int passes = 0;
  char *userIn = nullptr;
  char *userOut = nullptr;
  char *scratch = nullptr;
  std::size_t landOffset = 0;     ///< bytes into scratch
  std::size_t stageOutOffset = 0; ///< bytes into scratch
  std::size_t stageInOffset = 0;  ///< bytes into scratch (out of place)
  char *stageIn = nullptr;
  char *stageOut = nullptr;

  CCSYNTH_HD std::size_t bodyElems() const { return chunkElems * blockChunks; }
  CCSYNTH_HD bool isRemainder(int p) const { return p >= bodyPasses; }
  CCSYNTH_HD std::size_t sliceLen(int p) const {
    if (isRemainder(p))
      return 1;
    std::size_t off = std::size_t(p) * tileElems;
    std::size_t left = chunkElems - off;
    return left < tileElems ? left : tileElems;
  }
  /// Sets up a launch. `inBlockOffset` is (user input - user output) in
  /// blocks for in-place calls, 0 otherwise.
  CCSYNTH_HD void init(const Shape &s, std::size_t n, std::size_t esize,
                       std::size_t tile, const void *in, void *out, void *scr,
                       long inBlockOffset) {
    count = n;
    blockChunks = std::size_t(s.blockChunks);
    chunkElems = n / blockChunks;
    remainder = n % blockChunks;
    tileBytes = tile;
    tileElems = tile / esize;
    bodyPasses = int((chunkElems + tileElems - 1) / tileElems);
    passes = bodyPasses + (remainder ? 1 : 0);
    userIn = const_cast<char *>(static_cast<const char *>(in));
    userOut = static_cast<char *>(out);
    scratch = static_cast<char *>(scr);
    landOffset = std::size_t(s.scratchChunks) * tile;
    std::size_t stage = std::size_t(s.scratchChunks + s.landingChunks) * tile;
    std::size_t blocks = std::size_t(s.inBlocks + s.outBlocks);
    stageOutOffset = stage + blocks * blockChunks * 8;
    stageOut = scratch + stageOutOffset;
    stageInOffset = stage;
    stageIn = s.inplace ? stageOut + inBlockOffset * long(blockChunks * esize)
                        : scratch + stage;
  }

  /// Local address of chunk `pos` of block `blk` of buffer b in pass p.
  CCSYNTH_HD char *address(int b, int blk, int pos, int p,
                           std::size_t esize) const {
    bool rem = isRemainder(p);
    std::size_t off = rem ? 0 : std::size_t(p) * tileElems;
    switch (b) {
    case In:
      return rem ? stageIn + (std::size_t(blk) * blockChunks + pos) * esize
                 : userIn + (blk * count + pos * chunkElems + off) * esize;
    case Out:
      return rem ? stageOut + (std::size_t(blk) * blockChunks + pos) * esize
                 : userOut + (blk * count + pos * chunkElems + off) * esize;
    // Scratch and landing slots keep their place in every pass, the
    // remainder's included: credits and the pass separation guard a slot,
    // not a byte range, so no pass may reach into another slot.
    case Scr:
      return scratch + pos * tileBytes;
    default:
      return scratch + landOffset + pos * tileBytes;
    }
  }
  /// The same in a peer's output or landing (its buffers differ only in
  /// their bases: every rank of a launch has the same geometry).
  CCSYNTH_HD char *peerAddress(char *peerOut, char *peerScratch, int b, int blk,
                               int pos, int p, std::size_t esize) const {
    bool rem = isRemainder(p);
    std::size_t off = rem ? 0 : std::size_t(p) * tileElems;
    if (b == Out)
      return rem ? peerScratch + stageOutOffset +
                       (std::size_t(blk) * blockChunks + pos) * esize
                 : peerOut + (blk * count + pos * chunkElems + off) * esize;
    return peerScratch + landOffset + pos * tileBytes;
  }
  /// The same in any buffer of a peer (switch operations read and write
  /// every rank of their group at one address). `peerIn`/`peerOut` are the
  /// peer's user buffers: in place, the peer's staged input sits where its
  /// input sits relative to its output.
  CCSYNTH_HD char *groupAddress(const char *peerIn, char *peerOut,
                                char *peerScratch, bool inplace, int b, int blk,
                                int pos, int p, std::size_t esize) const {
    if (b == Out || b == Land)
      return peerAddress(peerOut, peerScratch, b, blk, pos, p, esize);
    if (b == Scr)
      return peerScratch + pos * tileBytes;
    if (!isRemainder(p))
      return const_cast<char *>(peerIn) +
             (blk * count + pos * chunkElems + std::size_t(p) * tileElems) *
                 esize;
    std::size_t staged = std::size_t(blk) * blockChunks + pos;
    if (!inplace)
      return peerScratch + stageInOffset + staged * esize;
    long inBlocks = long(peerIn - peerOut) / long(count * esize);
    return peerScratch + stageOutOffset +
           std::size_t(long(staged) + inBlocks * long(blockChunks)) * esize;
  }
};

} // namespace ccsynth::rt
