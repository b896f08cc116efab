// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Unit tests of Sema (static checks) and Lowering (evaluation, step
// derivation, custom collectives, limits).
#include "DslTestUtil.h"

#include "ccsynth/Schedule/Verifier.h"
#include "ccsynth/DSL/Parser.h"
#include "ccsynth/DSL/Sema.h"

#include <algorithm>

#include <catch2/catch.hpp>

using namespace ccsynth;
using namespace ccsynth::dsl;
using namespace ccsynth::dsl::test;

namespace {

Status semaOf(const std::string &text) {
  auto prog = parseProgram("s.ccl", text);
  if (!prog)
    return prog.error();
  return checkProgram(*prog);
}

std::string errorOf(const std::string &text,
                    std::map<std::string, long long> defines = {}) {
  auto r = compile(text, std::move(defines));
  return r ? std::string("(compiled)") : r.error().message;
}

} // namespace

TEST_CASE("Sema checks branches that never run", "[dsl][sema]") {
  // Lowering would skip the branch; Sema still sees the unknown name.
  Status s = semaOf("collective allreduce(ranks = 4);\n"
                    "if false { let x = nope + 1; }\n");
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message == "unknown name 'nope'");
  CHECK(s.error().loc.line == 2);
  CHECK(s.error().loc.col == 20);
}

TEST_CASE("Sema suggests a close name, for names up to 128 characters",
          "[dsl][sema]") {
  Status near = semaOf("param ranks = 4;\n"
                       "collective allreduce(ranks = rankz);\n");
  REQUIRE_FALSE(near.ok());
  CHECK(near.error().message == "unknown name 'rankz' (did you mean 'ranks'?)");
  // Past 128 characters a suggestion would cost the product of the lengths
  // for every name in scope: none is made.
  std::string known(129, 'a'), typo = known;
  typo.back() = 'b';
  Status far = semaOf("param " + known + " = 4;\n" +
                      "collective allreduce(ranks = " + typo + ");\n");
  REQUIRE_FALSE(far.ok());
  CHECK(far.error().message == "unknown name '" + typo + "'");
}

TEST_CASE("Sema scopes names by block", "[dsl][sema]") {
  CHECK(semaOf("collective allreduce(ranks = 4);\n"
               "for r in 0..4 { let x = r; }\n"
               "for r in 0..4 { let x = r + 1; }\n")
            .ok());
  // Shadowing in an inner block is allowed.
  CHECK(semaOf("collective allreduce(ranks = 4);\n"
               "let x = 1; for r in 0..4 { let x = r; }\n")
            .ok());
  Status after = semaOf("collective allreduce(ranks = 4);\n"
                        "for r in 0..4 { }\nlet y = r;\n");
  REQUIRE_FALSE(after.ok());
  CHECK(after.error().message.find("unknown name 'r'") != std::string::npos);
  Status redefined = semaOf("param ranks = 4; let ranks = 5;\n"
                            "collective allreduce(ranks = ranks);");
  REQUIRE_FALSE(redefined.ok());
  CHECK(redefined.error().notes.find("note: 'ranks' was first defined here") !=
        std::string::npos);
  Status builtin = semaOf("let min = 3; collective allreduce(ranks = 4);");
  REQUIRE_FALSE(builtin.ok());
  CHECK(builtin.error().message.find("built-in function") != std::string::npos);
}

TEST_CASE("Sema types expressions", "[dsl][sema]") {
  auto msg = [](const std::string &text) {
    Status s = semaOf("collective allreduce(ranks = 4);\n" + text);
    return s ? std::string("(ok)") : s.error().message;
  };
  CHECK(msg("let a = true + 1;") ==
        "type error: '+' needs two ints, but got a bool and an int");
  CHECK(msg("let a = 1 < 2 < 3;") ==
        "type error: '<' needs two ints, but got a bool and an int");
  CHECK(msg("let a = true == 1;") ==
        "type error: '==' needs two ints or two bools, but got a bool and "
        "an int");
  CHECK(msg("let a = 1 && true;").find("needs two bools") != std::string::npos);
  CHECK(msg("let a = !3;").find("the operand of '!' must be a bool") !=
        std::string::npos);
  CHECK(msg("let a = -(1 < 2);").find("the operand of '-' must be an int") !=
        std::string::npos);
  CHECK(msg("let a = min(1, true);")
            .find("argument 2 of min(...) must be an int") !=
        std::string::npos);
  CHECK(msg("let a = min;").find("'min' is a function") != std::string::npos);
  CHECK(msg("let a = log2(1, 2);")
            .find("log2(a) takes 1 argument, but 2 were given") !=
        std::string::npos);
  CHECK(msg("let b = input;") == "(ok)");
  CHECK(msg("let b = input; let c = chunk(0, b, 0);") == "(ok)");
  CHECK(msg("let c = chunk(0, input, true);")
            .find("argument 3 (the index) of chunk(...) must be an int") !=
        std::string::npos);
  CHECK(msg("let c = copy(1);").find("is a statement") != std::string::npos);
  CHECK(msg("for i in 0..true { }").find("the end of a range must be an int") !=
        std::string::npos);
  CHECK(msg("assert(1);").find("an assertion must be a bool") !=
        std::string::npos);
  CHECK(msg("copy(chunk(0, input, 0) -> chunk(1, output, 0), tb = true);")
            .find("the hint 'tb' must be an int") != std::string::npos);
  CHECK(msg("let v = sum(j in 0..4 : j);")
            .find("only allowed in a 'post' block") != std::string::npos);
}

TEST_CASE("Sema checks statement placement", "[dsl][sema]") {
  auto msg = [](const std::string &text) {
    Status s = semaOf(text);
    return s ? std::string("(ok)") : s.error().message;
  };
  CHECK(msg("collective allreduce(ranks = 4); scratch chunks = 1; "
            "scratch chunks = 2;")
            .find("declared twice") != std::string::npos);
  CHECK(msg("scratch chunks = 1; collective allreduce(ranks = 4);")
            .find("after the collective") != std::string::npos);
  CHECK(msg("collective allreduce(ranks = 4); if true { collective "
            "allgather(ranks = 4); }")
            .find("only allowed at the top level") != std::string::npos);
  CHECK(msg("collective c(ranks = 2) { input chunks = 1; output chunks = 1; "
            "post { output(0, 0) = chunk(0, input, 0); } }")
            .find("chunk references are not allowed") != std::string::npos);
  CHECK(msg("collective c(ranks = 2) { input chunks = 1; output chunks = 1; "
            "pre { output(0, 0) = input(0, 0); } post { } }")
            .find("only allowed in a custom collective's 'post' block") !=
        std::string::npos);
  CHECK(msg("collective c(ranks = 2) { input chunks = 1; output chunks = 1; "
            "post { output(0, 0) = 1; } }")
            .find("a postcondition (e.g. 'input(j, 0)'") != std::string::npos);
  CHECK(msg("collective c(ranks = 2) { input chunks = 1; post { } }")
            .find("needs 'output chunks") != std::string::npos);
  CHECK(msg("collective c(ranks = 2, chunks = 2) { input chunks = 1; "
            "output chunks = 1; post { } }")
            .find("sets 'input chunks' and 'output chunks'") !=
        std::string::npos);
  CHECK(msg("collective c(ranks = 2) { input chunks = 1; output chunks = 1; "
            "post { step { } } }")
            .find("'step' blocks belong to the schedule") != std::string::npos);
  CHECK(msg("collective broadcast(ranks = 4, root = 2);") == "(ok)");
  CHECK(msg("collective AllGather(ranks = 4);") == "(ok)");
}

TEST_CASE("integer expressions follow C semantics", "[dsl][lowering]") {
  // Every assertion must hold, or compilation fails at it.
  std::string text = R"(collective allreduce(ranks = 4);
assert(7 / 2 == 3 && -7 / 2 == -3 && 7 % 3 == 1 && -7 % 3 == -1);
assert(mod(-7, 3) == 2 && mod(7, 3) == 1 && mod(-3, 3) == 0);
assert(min(3, -4) == -4 && max(3, -4) == 3 && xor(5, 3) == 6);
assert(pow(2, 10) == 1024 && pow(3, 0) == 1 && pow(-1, 5) == -1 && pow(0, 0) == 1);
assert(log2(1) == 0 && log2(8) == 3 && log2(9) == 3);
assert(clog2(1) == 0 && clog2(8) == 3 && clog2(9) == 4);
assert(1 + 2 * 3 == 7 && (1 + 2) * 3 == 9 && -(2 - 5) == 3);
assert(!(1 > 2) && 2 >= 2 && 1 <= 1 && 1 != 2 && (true == true));
// Short-circuit: the division never runs.
let d = 0;
assert(d == 0 || 10 / d > 1);
assert(!(d != 0 && 10 / d > 1));
assert(9223372036854775807 - 1 + 1 == 9223372036854775807);
)";
  auto r = compile(text);
  INFO((r ? "" : r.error().format()));
  CHECK(r.ok());
  CHECK(errorOf("collective allreduce(ranks = 4); assert(1 + 1 == 3);") ==
        "assertion failed");
  CHECK(errorOf("collective allreduce(ranks = 4); let x = pow(2, 63);") ==
        "integer overflow in pow(2, 63)");
  CHECK(errorOf("collective allreduce(ranks = 4); let x = "
                "-9223372036854775807 - 1; let y = -x;") ==
        "integer overflow in '-'");
  CHECK(errorOf("collective allreduce(ranks = 4); let x = "
                "-9223372036854775807 - 1; let y = x / -1;") ==
        "integer overflow in '-9223372036854775808 / -1'");
  CHECK(errorOf("collective allreduce(ranks = 4); let x = "
                "-9223372036854775807 - 1; assert(x % -1 == 0);") ==
        "(compiled)");
  CHECK(errorOf("collective allreduce(ranks = 4); let x = mod(3, 0);") ==
        "mod(a, b) needs b > 0, but b is 0");
  CHECK(errorOf("collective allreduce(ranks = 4); let x = pow(2, -1);")
            .find("non-negative exponent") != std::string::npos);
}

TEST_CASE("parameters take defaults and -D overrides", "[dsl][lowering]") {
  std::string text = "param nodes = 2;\nparam gpus = 4;\n"
                     "param ranks = nodes * gpus;\n"
                     "collective allgather(ranks = ranks);\n";
  auto a = compile(text);
  REQUIRE(a.ok());
  CHECK(a->schedule.collective.numRanks == 8);
  REQUIRE(a->params.size() == 3);
  CHECK(a->params[2] == std::pair<std::string_view, long long>{"ranks", 8});
  auto b = compile(text, {{"nodes", 3}});
  REQUIRE(b.ok());
  CHECK(b->schedule.collective.numRanks == 12);
  // An overridden default is not evaluated at all.
  auto c = compile("param ranks = 1 / 0;\ncollective allgather(ranks = ranks);",
                   {{"ranks", 4}});
  REQUIRE(c.ok());
  CHECK(c->schedule.collective.numRanks == 4);
  auto d = compile(text, {{"gpu", 8}});
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().message ==
        "undefined parameter 'gpu' in -D gpu=8 (this program's parameters: "
        "nodes, gpus, ranks)");
  CHECK(d.error().loc.line == 1);
  auto e = compile("collective allgather(ranks = 4);", {{"x", 1}});
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message.find("declares no parameters") != std::string::npos);
}

TEST_CASE("steps follow data dependencies", "[dsl][lowering]") {
  auto r = compile(R"(collective allgather(ranks = 4);
scratch chunks = 2;
copy(chunk(0, input, 0) -> chunk(1, scratch, 0));
copy(chunk(2, input, 0) -> chunk(3, scratch, 0));
copy(chunk(1, scratch, 0) -> chunk(2, scratch, 1));
copy(chunk(3, input, 0) -> chunk(1, scratch, 0));
copy(chunk(1, scratch, 0) -> chunk(1, scratch, 1));
reduce(chunk(0, input, 0) -> chunk(1, scratch, 1));
)");
  REQUIRE(r.ok());
  const auto &t = r->schedule.transfers;
  REQUIRE(t.size() == 6);
  CHECK(t[0].step == 0); // independent
  CHECK(t[1].step == 0); // independent
  CHECK(t[2].step == 1); // reads what #0 wrote
  CHECK(t[3].step == 2); // overwrites what #2 read (write after read)
  CHECK(t[4].step == 3); // reads what #3 wrote
  CHECK(t[5].step == 4); // reduces into what #4 wrote
  CHECK(t[5].op == TransferOp::Reduce);
  // Each transfer remembers its statement.
  REQUIRE(r->schedule.transferLocs.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CHECK(r->schedule.transferLocs[i].line == 3 + i);
    CHECK(r->schedule.transferLocs[i].col == 1);
    CHECK(r->schedule.transferLocs[i].file == "test.ccl");
  }
}

TEST_CASE("step blocks share one step and see the state before it",
          "[dsl][lowering]") {
  auto r = compile(R"(collective allgather(ranks = 2);
scratch chunks = 2;
copy(chunk(0, input, 0) -> chunk(0, scratch, 0));
copy(chunk(1, input, 0) -> chunk(1, scratch, 0));
step {
  // Swap through scratch: both read the old values.
  copy(chunk(0, scratch, 0) -> chunk(1, scratch, 1));
  copy(chunk(1, scratch, 0) -> chunk(0, scratch, 1));
  copy(chunk(0, input, 0) -> chunk(0, output, 0));
}
copy(chunk(0, scratch, 1) -> chunk(0, output, 1));
copy(chunk(1, scratch, 1) -> chunk(1, output, 0));
copy(chunk(1, input, 0) -> chunk(1, output, 1));
step { }
)");
  REQUIRE(r.ok());
  const auto &t = r->schedule.transfers;
  REQUIRE(t.size() == 8);
  CHECK(t[2].step == 1);
  CHECK(t[3].step == 1);
  CHECK(t[4].step == 1); // pulled to the block's step, not its own earliest
  CHECK(t[5].step == 2);
  CHECK(t[6].step == 2);
  CHECK(t[7].step == 0);
  CHECK(verifySchedule(r->schedule).ok());

  // Consecutive step blocks run in order even when independent.
  auto rounds = compile(R"(collective alltoall(ranks = 3);
for k in 0..3 {
  step {
    for r in 0..3 {
      copy(chunk(r, input, (r + k) % 3) -> chunk((r + k) % 3, output, r));
    }
  }
}
)");
  REQUIRE(rounds.ok());
  REQUIRE(rounds->schedule.transfers.size() == 9);
  for (int i = 0; i < 9; ++i)
    CHECK(rounds->schedule.transfers[i].step == i / 3);
  CHECK(verifySchedule(rounds->schedule).ok());
}

TEST_CASE("hints, protocol, instances and scratch reach the schedule",
          "[dsl][lowering]") {
  auto r = compile(
      R"(collective allgather(ranks = 2, chunks = 2) protocol LL128 instances 3;
scratch chunks = 5;
copy(chunk(0, input, 0, 2) -> chunk(1, output, 0, 2), tb = 3, ch = 1);
)",
      {}, "dir/my_prog.ccl");
  REQUIRE(r.ok());
  const Schedule &s = r->schedule;
  CHECK(s.name == "my_prog");
  CHECK(s.origin == "dsl:dir/my_prog.ccl");
  CHECK(s.protocol == "LL128");
  CHECK(s.instances == 3);
  CHECK(s.scratchChunks == 5);
  REQUIRE(s.transfers.size() == 1);
  CHECK(s.transfers[0].count == 2);
  CHECK(s.transfers[0].threadblock == 3);
  CHECK(s.transfers[0].channel == 1);
  CHECK(s.transfers[0].link == -1);
  CHECK(r->collectiveLoc.line == 1);
}

TEST_CASE("custom collectives become pre/postconditions", "[dsl][lowering]") {
  auto r = compile(R"(param ranks = 3;
collective gather_sum(ranks = ranks) {
  input chunks = 2;
  output chunks = 2;
  pre {
    for r in 0..ranks { input(r, 1); }
    input(0, 0);
  }
  post {
    output(0, 0) = sum(r in 0..ranks : input(r, 1));
    output(1, 1) = input(0, 0) + input(2, 1);
  }
}
)");
  REQUIRE(r.ok());
  const Collective &c = r->schedule.collective;
  CHECK(c.kind == CollectiveKind::Custom);
  CHECK(c.name == "gather_sum");
  CHECK(c.numRanks == 3);
  CHECK(c.inputChunks == 2);
  CHECK(c.outputChunks == 2);
  // Values are numbered in (rank, index) order over the defined inputs.
  CHECK(std::ranges::equal(c.preOf(0), std::vector<int>{0, 1}));
  CHECK(std::ranges::equal(c.preOf(1), std::vector<int>{-1, 2}));
  CHECK(std::ranges::equal(c.preOf(2), std::vector<int>{-1, 3}));
  CHECK(c.postAt(0, 0).toVector() == std::vector<int>{1, 2, 3});
  CHECK(c.postAt(1, 1).toVector() == std::vector<int>{0, 3});
  CHECK_FALSE(c.postAt(0, 1).constrained());
  CHECK_FALSE(c.postAt(2, 0).constrained());
  CHECK(r->postconditionLoc(0, 0).line == 10);
  CHECK(r->postconditionLoc(1, 1).line == 11);
  CHECK(r->postconditionLoc(2, 0).line == 2); // unconstrained: the header

  // Without a pre block every input chunk holds a value.
  auto all = compile("collective c(ranks = 2) { input chunks = 1; output "
                     "chunks = 1; post { output(0, 0) = input(1, 0); } }");
  REQUIRE(all.ok());
  CHECK(all->schedule.collective.preAt(0, 0) == 0);
  CHECK(all->schedule.collective.preAt(1, 0) == 1);
  CHECK(errorOf("collective c(ranks = 2) { input chunks = 1; output chunks = "
                "1; post { output(0, 0) = sum(j in 0..0 : input(j, 0)); } }")
            .find("is empty") != std::string::npos);
  CHECK(errorOf("collective c(ranks = 2) { input chunks = 1; output chunks = "
                "1; post { output(0, 0) = sum(j in 0..2 : input(0, 0)); } }") ==
        "this sum counts input(0, 0) twice (each input value may appear once)");
  CHECK(errorOf("collective c(ranks = 2) { input chunks = 0; output chunks = "
                "1; post { output(0, 0) = input(0, 0); } }")
            .find("the input has no chunks") != std::string::npos);
}

TEST_CASE("in-place buffers alias", "[dsl][lowering]") {
  // In an in-place allreduce the output is the input: reading it is fine,
  // and writes to one are seen through the other.
  auto r = compile(R"(collective allreduce(ranks = 2) inplace;
reduce(chunk(0, output, 0) -> chunk(1, input, 0));
copy(chunk(1, output, 0) -> chunk(0, input, 0));
)");
  REQUIRE(r.ok());
  CHECK(r->schedule.transfers[1].step == 1);
  CHECK(verifySchedule(r->schedule).ok());
  // In-place allgather: rank r's input is its output chunk r.
  auto ag = compile(R"(collective allgather(ranks = 2) inplace;
copy(chunk(0, input, 0) -> chunk(1, output, 0));
copy(chunk(1, output, 1) -> chunk(0, output, 1));
)");
  REQUIRE(ag.ok());
  CHECK(verifySchedule(ag->schedule).ok());
}

TEST_CASE("limits stop runaway programs with located errors",
          "[dsl][lowering]") {
  LoweringOptions o;
  o.maxIterations = 1000;
  auto loops =
      compileProgram("l.ccl",
                     "collective allreduce(ranks = 4);\nfor i in 0..10 {\n"
                     "  for j in 0..1000 { }\n}\n",
                     o);
  REQUIRE_FALSE(loops.ok());
  CHECK(loops.error().loc.line == 3);
  CHECK(loops.error().message.find("more than 1000 loop iterations") !=
        std::string::npos);

  o = {};
  o.maxTransfers = 10;
  auto many = compileProgram(
      "m.ccl",
      "collective allgather(ranks = 4);\nscratch chunks = 1;\n"
      "copy(chunk(0, input, 0) -> chunk(0, scratch, 0));\n"
      "for i in 0..100 {\n"
      "  copy(chunk(0, scratch, 0) -> chunk(1, scratch, 0));\n}\n",
      o);
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().loc.line == 5);
  CHECK(many.error().message == "the program emits more than 10 transfers");

  o = {};
  o.maxChunkMoves = 100;
  auto moves = compileProgram(
      "v.ccl",
      "collective allgather(ranks = 2, chunks = 40);\n"
      "for i in 0..3 {\n"
      "  copy(chunk(0, input, 0, 40) -> chunk(1, output, 0, 40));\n}\n",
      o);
  REQUIRE_FALSE(moves.ok());
  CHECK(moves.error().loc.line == 3);
  CHECK(moves.error().message ==
        "the program's transfers move more than 100 chunks in total");
  CHECK(moves.error().notes.find("note: in the iteration with i = 2") !=
        std::string::npos);

  o = {};
  o.maxSlots = 100;
  auto big = compileProgram("b.ccl", "collective allgather(ranks = 11);", o);
  REQUIRE_FALSE(big.ok());
  CHECK(big.error().message.find("is too large") != std::string::npos);
  auto scratch = compileProgram(
      "s.ccl", "collective allreduce(ranks = 10);\nscratch chunks = 9;", o);
  REQUIRE_FALSE(scratch.ok());
  CHECK(scratch.error().message.find("the scratch size") != std::string::npos);
  auto custom = compileProgram(
      "c.ccl",
      "collective c(ranks = 10) { input chunks = 5; output chunks = 6; post "
      "{ } }",
      o);
  REQUIRE_FALSE(custom.ok());
  CHECK(custom.error().message.find("'output chunks'") != std::string::npos);
  CHECK(errorOf("collective allgather(ranks = 4, chunks = 0);") ==
        "'chunks' must be between 1 and 1048576, but it is 0");
  CHECK(errorOf("collective broadcast(ranks = 4, root = 4);") ==
        "'root' (a rank) must be between 0 and 3, but it is 4");
  CHECK(errorOf("collective allgather(ranks = 4) instances 0;") ==
        "'instances' must be between 1 and 1024, but it is 0");
  CHECK(errorOf("collective allgather(ranks = 4); copy(chunk(0, input, 0) "
                "-> chunk(1, output, 0), tb = -1);") ==
        "the hint 'tb' must be between 0 and 2147483647, but it is -1");
}

TEST_CASE("lowering matches sequential execution on random programs",
          "[dsl][lowering]") {
  // Random straight-line programs: the test executes them one statement at
  // a time on symbolic values and writes the result as the postcondition of
  // a custom collective; the derived steps must reproduce it exactly.
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  auto next = [&seed](int bound) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return (int)(seed % (uint64_t)bound);
  };
  const int ranks = 3, chunks = 2;
  const char *buffers[] = {"input", "output", "scratch"};
  for (int round = 0; round < 300; ++round) {
    // state[r][b][i]: sorted value ids, empty = undefined.
    std::vector<std::vector<std::vector<std::vector<int>>>> state(
        ranks, std::vector<std::vector<std::vector<int>>>(
                   3, std::vector<std::vector<int>>(chunks)));
    for (int r = 0; r < ranks; ++r)
      for (int i = 0; i < chunks; ++i)
        state[r][0][i] = {r * chunks + i};
    std::string body;
    int emitted = 0;
    for (int attempt = 0; attempt < 60 && emitted < 20; ++attempt) {
      int sr = next(ranks), sb = next(3), si = next(chunks);
      int dr = next(ranks), db = next(3), di = next(chunks);
      if (state[sr][sb][si].empty() || (sr == dr && sb == db && si == di))
        continue;
      bool reduce = next(2) == 1;
      auto &src = state[sr][sb][si];
      auto &dst = state[dr][db][di];
      if (reduce) {
        if (dst.empty())
          continue;
        std::vector<int> merged;
        std::merge(dst.begin(), dst.end(), src.begin(), src.end(),
                   std::back_inserter(merged));
        if (std::adjacent_find(merged.begin(), merged.end()) != merged.end())
          continue;
        dst = merged;
      } else {
        dst = src;
      }
      body += std::string(reduce ? "reduce" : "copy") + "(chunk(" +
              std::to_string(sr) + ", " + buffers[sb] + ", " +
              std::to_string(si) + ") -> chunk(" + std::to_string(dr) + ", " +
              buffers[db] + ", " + std::to_string(di) + "));\n";
      ++emitted;
    }
    std::string post;
    for (int r = 0; r < ranks; ++r)
      for (int i = 0; i < chunks; ++i) {
        const auto &v = state[r][1][i];
        if (v.empty())
          continue;
        post += "    output(" + std::to_string(r) + ", " + std::to_string(i) +
                ") = ";
        for (size_t k = 0; k < v.size(); ++k)
          post += (k ? " + " : "") + std::string("input(") +
                  std::to_string(v[k] / chunks) + ", " +
                  std::to_string(v[k] % chunks) + ")";
        post += ";\n";
      }
    std::string text = "collective random(ranks = 3) {\n  input chunks = 2;\n"
                       "  output chunks = 2;\n  post {\n" +
                       post + "  }\n}\nscratch chunks = 2;\n" + body;
    INFO(text);
    auto r = compile(text);
    REQUIRE(r.ok());
    VerifyResult v = verifySchedule(r->schedule);
    INFO((v.ok() ? "" : v.issues[0].message));
    REQUIRE(v.ok());
  }
}

TEST_CASE("switch operations: members share a step block and a switch",
          "[dsl][lowering][innetwork]") {
  const std::string head = "param ranks = 4;\n"
                           "collective allreduce(ranks = ranks);\n";
  // One reduction of every rank's chunk into rank 1, then its multicast.
  const std::string nvls = "step { for j in 0..ranks {\n"
                           "  switch_reduce(chunk(j, input, 0) -> "
                           "chunk(1, output, 0), switch = 2);\n"
                           "} }\n"
                           "step { for j in 0..ranks { if j != 1 {\n"
                           "  multicast(chunk(1, output, 0) -> "
                           "chunk(j, output, 0), switch = 2);\n"
                           "} } }\n";
  auto ok = compile(head + nvls, {});
  REQUIRE(ok);
  const Schedule &s = ok->schedule;
  REQUIRE(s.transfers.size() == 7);
  for (size_t i = 0; i < s.transfers.size(); ++i) {
    CHECK(s.transfers[i].sw == 2);
    CHECK(s.transfers[i].op ==
          (i < 4 ? TransferOp::SwitchReduce : TransferOp::Multicast));
    CHECK(s.transfers[i].step == (i < 4 ? 0 : 1));
  }
  CHECK(s.transferLocs.size() == 7);
  CHECK(s.transferLocs[0].line == 4);
  VerifyResult v = verifySchedule(s);
  INFO((v.ok() ? "" : v.issues.front().message));
  CHECK(v.ok());

  // In place, the owner's own contribution is the destination itself.
  auto inPlace = compile("param ranks = 4;\n"
                         "collective allreduce(ranks = ranks) inplace;\n" +
                             nvls,
                         {});
  REQUIRE(inPlace);
  CHECK(verifySchedule(inPlace->schedule).ok());

  // Each program after the collective, and the error it gets: outside a
  // step block, without a switch, a switch on a copy, a misspelt switch;
  // two reductions into one chunk in one step are not one operation, nor
  // does a copy join one; a multicast reads what is there before the step.
  const std::string reduce01 =
      "switch_reduce(chunk(0, input, 0) -> chunk(1, output, 0), switch = 0);\n";
  const std::pair<std::string, std::string> bad[] = {
      {reduce01, "'switch_reduce' outside a 'step { }' block"},
      {"step { multicast(chunk(0, input, 0) -> chunk(1, output, 0)); }\n",
       "'multicast' needs the switch it goes through"},
      {"copy(chunk(0, input, 0) -> chunk(1, output, 0), switch = 0);\n",
       "'copy' goes point to point"},
      {"step { multicast(chunk(0, input, 0) -> chunk(1, output, 0), "
       "swtch = 0); }\n",
       "did you mean 'switch'"},
      {"step {\n" + reduce01 +
           "switch_reduce(chunk(2, input, 0) -> chunk(1, output, 0), "
           "switch = 1);\n}\n",
       "overlapping writes in one step"},
      {"step {\n" + reduce01 +
           "copy(chunk(2, input, 0) -> chunk(1, output, 0));\n}\n",
       "overlapping writes in one step"},
      {"copy(chunk(1, input, 0) -> chunk(1, output, 0));\nstep {\n" + reduce01 +
           "multicast(chunk(1, output, 0) -> chunk(2, output, 0), "
           "switch = 0);\n}\n",
       "race in one step"},
  };
  for (const auto &[program, error] : bad) {
    INFO(program);
    CHECK_THAT(errorOf(head + program), Catch::Contains(error));
  }
}
