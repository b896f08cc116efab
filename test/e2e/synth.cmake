# End-to-end tests of `ccsynth synth` (ccsynth_expect is defined in
# core.cmake).
set(SK ${CCSYNTH_SOURCE_DIR}/sketches)
set(IN ${CMAKE_CURRENT_SOURCE_DIR}/inputs)

# dgx1 AllGather at 1 KB: the diameter's two steps, proven optimal; the
# written schedule verifies.
ccsynth_expect(synth-dgx1-allgather-1k RC 0 FILE synth-ag-dgx1.json
  MATCH "allgather\\(ranks=8, chunks=1\\) on dgx1: [0-9]+ transfers in 2 steps"
        "proven optimal" "1K +1\\.4[0-9] " "solve time"
  CMD ${CC} synth --topo dgx1 --sketch ${SK}/dgx1.json --collective allgather
      --size 1K -q -o ${E2E_OUT}/synth-ag-dgx1.json)
ccsynth_expect(synth-dgx1-allgather-verify RC 0 MATCH "OK: allgather"
  CMD ${CC} verify ${E2E_OUT}/synth-ag-dgx1.json)
set_tests_properties(e2e:synth-dgx1-allgather-verify PROPERTIES
  DEPENDS e2e:synth-dgx1-allgather-1k)

# A reduction on two nodes, with the SMT-LIB dump.
ccsynth_expect(synth-ndv2x2-allreduce RC 0 FILE synth-ar-ndv2x2.smt2
  MATCH "allreduce\\(ranks=16" "best baseline at 1M"
  CMD ${CC} synth --topo ndv2x2 --sketch ${SK}/ndv2x2.json --collective
      allreduce --size 1M --time-limit 30 -q --dump-smt
      ${E2E_OUT}/synth-ar-ndv2x2.smt2 -o ${E2E_OUT}/synth-ar-ndv2x2.json)
ccsynth_expect(synth-ndv2x2-allreduce-verify RC 0 MATCH "OK: allreduce"
  CMD ${CC} verify ${E2E_OUT}/synth-ar-ndv2x2.json)
set_tests_properties(e2e:synth-ndv2x2-allreduce-verify PROPERTIES
  DEPENDS e2e:synth-ndv2x2-allreduce)

# An infeasible sketch: exit code 4, the rank and chunk that can never be
# delivered and the field to change; no output file.
ccsynth_expect(synth-infeasible RC 4
  MATCH "infeasible-sketch.json:3:[0-9]+: error: rank [0-9]+ \\(node 1, GPU 0\\) can never receive in\\[3\\]\\[0\\]"
        "add 3 to the list"
  CMD ${CC} synth --topo ndv2x2 --sketch ${IN}/infeasible-sketch.json
      --collective allgather -o ${E2E_OUT}/never-written-synth.json)

# A malformed sketch: located error, exit code 1.
ccsynth_expect(synth-bad-sketch RC 1
  MATCH "bad-sketch.json:3:[0-9]+: error: unknown intranode strategy 'ring'"
  CMD ${CC} synth --topo dgx1 --sketch ${IN}/bad-sketch.json
      --collective allgather -o ${E2E_OUT}/never-written-synth.json)
ccsynth_expect(synth-sketch-topology-mismatch RC 1
  MATCH "ndv2x2.json:[0-9]+:[0-9]+: error: the sketch is for 2 nodes but topology 'dgx1' has 1"
  CMD ${CC} synth --topo dgx1 --sketch ${SK}/ndv2x2.json
      --collective allgather -o ${E2E_OUT}/never-written-synth.json)
ccsynth_expect(synth-unknown-collective RC 1 MATCH "unknown collective 'allgahter'"
  CMD ${CC} synth --topo dgx1 --collective allgahter
      -o ${E2E_OUT}/never-written-synth.json)

# --exact-chunkup: the sketch's input_chunkup (6 on dgx1) is the split, as
# in TACCL, where the search would otherwise also try others.
ccsynth_expect(synth-exact-chunkup RC 0 MATCH "\\(chunk split 6\\)"
  CMD ${CC} synth --topo dgx1 --sketch ${SK}/dgx1.json --collective allgather
      --size 1K --exact-chunkup -q -o ${E2E_OUT}/synth-exact-chunkup.json)
ccsynth_expect(synth-exact-chunkup-conflict RC 2
  MATCH "--chunks 2 contradicts --exact-chunkup"
  CMD ${CC} synth --topo dgx1 --sketch ${SK}/dgx1.json --collective allgather
      --chunks 2 --exact-chunkup -o ${E2E_OUT}/never-written-exact.json)

# At a power-of-two size the splits with an odd factor come after the
# others (MSCCL selects their programs for no such size). A split of 64 on
# 8 ranks gives loops of at least 512 chunks: 1K is below one loop, so the
# step-level table has no time of the schedule's own there and says NCCL
# runs. However little of the limit Z3 leaves to the tuning, the first
# configuration of the schedule and of its power-of-two re-cut are timed
# (NCCL's ring only when time is left: its columns at 1K may be there).
ccsynth_expect(synth-split-order RC 0
  MATCH "chunk splits to try: 2, 4, 8, 16, 32, 64, 128, 256, 512, 3, 6, 12,"
  CMD ${CC} synth --topo dgx1 --collective allreduce --time-limit 2
      -o ${E2E_OUT}/synth-split-order.json)
ccsynth_expect(synth-step-level-below-loop RC 0
  MATCH "\n +1K +- +-( +[0-9.]+ +[0-9.]+ +-)?\n"
        "at 1K no lowering of the schedule is selected by MSCCL"
  CMD ${CC} synth --topo dgx1 --collective allgather --chunks 64
      --time-limit 8 -q -o ${E2E_OUT}/synth-below-loop.json)

# A sketch that lets only GPUs 0 and 4 cross nodes forbids links the ring
# baseline uses; the baseline is faster and the summary says so plainly (the
# schedule written is the sketch's, slower, with enough digits). Its two
# switches share GPU 4, which TACCL refuses and ccsynth accepts: every link
# still belongs to one switch.
ccsynth_expect(synth-sketch-forbids-baseline RC 0
  MATCH "0\\.[0-9]+x, slower than the baseline"
        "the ring baseline is faster, but it uses links the sketch forbids"
  CMD ${CC} synth --topo dgx-a100x2
      --sketch ${IN}/split-switch-sketch.json --collective allgather
      --time-limit 10 -q -o ${E2E_OUT}/synth-split-switch.json)

# TACCL's meaning of "switch": links are kept and each switch adds shared
# port bandwidth, so two quad switches on ndv2 (which once forbade the links
# between the quads) are feasible; the written schedule verifies.
ccsynth_expect(synth-taccl-quad-switches RC 0 FILE synth-ag-quads.json
  MATCH "allgather\\(ranks=16" "32 switch port limits added"
        "differ in bandwidth"
  CMD ${CC} synth --topo ndv2x2 --sketch ${IN}/ndv2-quad-switches.json
      --collective allgather --time-limit 20 -q
      -o ${E2E_OUT}/synth-ag-quads.json)
ccsynth_expect(synth-taccl-quad-switches-verify RC 0 MATCH "OK: allgather"
  CMD ${CC} verify ${E2E_OUT}/synth-ag-quads.json)
set_tests_properties(e2e:synth-taccl-quad-switches-verify PROPERTIES
  DEPENDS e2e:synth-taccl-quad-switches)

# Two switches sharing a GPU pair: which one a transfer crosses is unclear;
# refused at the second switch.
ccsynth_expect(synth-taccl-overlapping-switches RC 1
  MATCH "overlap-pair-sketch.json:4:[0-9]+: error: switches 0 and 1 both contain GPUs 2 and 3"
  CMD ${CC} synth --topo dgx-a100 --sketch ${IN}/overlap-pair-sketch.json
      --collective allgather
      -q -o ${E2E_OUT}/never-written-overlap.json)

# A symmetry that maps each node onto itself but not the internode links:
# as in TACCL, the sends inside each node are tied to their images and those
# between nodes are free; the node swap maps the whole machine and ties
# whole routes. The written schedule verifies.
ccsynth_expect(synth-taccl-partial-symmetry RC 0
  FILE synth-ag-partial-symmetry.json
  MATCH "allgather\\(ranks=16"
        "entry \\[4, 8\\] maps the links inside its blocks but not those between blocks: as in TACCL, the sends of \\[4, 8\\] over the 64 links inside blocks are tied to their images, those between blocks are free"
  CMD ${CC} synth --topo ndv2x2 --sketch ${IN}/partial-symmetry-sketch.json
      --collective allgather --size 16K --time-limit 20 -q
      -o ${E2E_OUT}/synth-ag-partial-symmetry.json)
ccsynth_expect(synth-taccl-partial-symmetry-verify RC 0 MATCH "OK: allgather"
  CMD ${CC} verify ${E2E_OUT}/synth-ag-partial-symmetry.json)
set_tests_properties(e2e:synth-taccl-partial-symmetry-verify PROPERTIES
  DEPENDS e2e:synth-taccl-partial-symmetry)

# The same rotation where only GPU 0 -> remote GPU 1 crosses nodes: a chunk
# and its tied partner would both enter node 1 at GPU 9, so no route
# satisfies the ties (TACCL's model has no solution); ccsynth's solver
# searches without them and says so. The written schedule verifies.
ccsynth_expect(synth-taccl-block-symmetry RC 0
  FILE synth-ag-block-symmetry.json
  MATCH "\\[4, 8\\] maps the links inside its blocks"
        "no plan within the solver's depth or horizon satisfies the ties of symmetry_offsets entry \\[4, 8\\]; the solver searched without them"
  CMD ${CC} synth --topo ndv2x2 --sketch ${IN}/block-symmetry-sketch.json
      --collective allgather --size 16K --time-limit 10 -q
      -o ${E2E_OUT}/synth-ag-block-symmetry.json)
ccsynth_expect(synth-taccl-block-symmetry-verify RC 0 MATCH "OK: allgather"
  CMD ${CC} verify ${E2E_OUT}/synth-ag-block-symmetry.json)
set_tests_properties(e2e:synth-taccl-block-symmetry-verify PROPERTIES
  DEPENDS e2e:synth-taccl-block-symmetry)

# TACCL's NDv2 profile, as shipped, on the built-in shape; the schedule's
# topology is the profiled one: simulate needs the same profile.
set(TACCL_TOPO ${CCSYNTH_SOURCE_DIR}/test/inputs/taccl-topo)
ccsynth_expect(synth-taccl-profile RC 0 FILE synth-ag-profiled.json
  MATCH "allgather\\(ranks=16" "wrote"
  CMD ${CC} synth --topo ndv2x2 --topo-profile ${TACCL_TOPO}/topo-ndv2-1MB.json
      --sketch ${SK}/ndv2x2.json --collective allgather --time-limit 10 -q
      -o ${E2E_OUT}/synth-ag-profiled.json)
ccsynth_expect(synth-taccl-profile-simulate RC 0 MATCH "1G +[0-9.]+ "
  CMD ${CC} simulate ${E2E_OUT}/synth-ag-profiled.json --sizes 1G
      --topo-profile ${TACCL_TOPO}/topo-ndv2-1MB.json)
ccsynth_expect(synth-taccl-profile-missing RC 1
  MATCH "pass the --topo-profile it was made with"
  CMD ${CC} simulate ${E2E_OUT}/synth-ag-profiled.json --sizes 1G)
ccsynth_expect(synth-taccl-profile-compile RC 0 FILE synth-ag-profiled.xml
  CMD ${CC} compile ${E2E_OUT}/synth-ag-profiled.json --target msccl-xml
      --topo-profile ${TACCL_TOPO}/topo-ndv2-1MB.json
      -o ${E2E_OUT}/synth-ag-profiled.xml)
set_tests_properties(e2e:synth-taccl-profile-simulate
  e2e:synth-taccl-profile-missing e2e:synth-taccl-profile-compile
  PROPERTIES DEPENDS e2e:synth-taccl-profile)

# The time limit bounds the work at scale (time-limit.cmake: at most three
# times the limit plus 10 s of CPU time, which load does not stretch; the
# benchmark bench/synth_time_limit.sh measures the limit itself): 256 ranks
# (dgx-h100x32) writes a verified AllGather under a 5 s limit; on 512
# ranks an AllReduce writes at least the tree baseline (no synthesized
# candidate of 1.5M transfers can be verified in time) and a ReduceScatter
# the hierarchical baseline (measured first: the time limit allows one);
# on 1,024 ranks an AllReduce writes the tree baseline. 4,096 ranks
# (dgx-h100x512) is not tested: building its 16.7M explicit links alone
# takes 2-10 s there (see docs/performance/scale-and-hostile-inputs.md).
foreach(case "dgx-h100x32;allgather;1" "dgx-h100x64;allreduce;1"
        "dgx-h100x64;reducescatter;1" "dgx-h100x128;allreduce;1")
  list(GET case 0 topo)
  list(GET case 1 coll)
  list(GET case 2 write)
  add_test(NAME e2e:synth-time-limit-${topo}-${coll}
    COMMAND ${CMAKE_COMMAND} -DCC=${CC} -DTOPO=${topo} -DCOLL=${coll}
      -DLIMIT=5 -DWRITE=${write} -DOUT=time-limit-${topo}-${coll}.json
      -DWORKDIR=${E2E_OUT}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/time-limit.cmake)
  # Alone: the limit runs on the wall clock, and other tests would leave the
  # search less of it (a worse schedule, or none where one must be written).
  set_tests_properties(e2e:synth-time-limit-${topo}-${coll} PROPERTIES
    RUN_SERIAL TRUE)
endforeach()

# --in-network: NCCL's NVLS alone and mixed with point-to-point schedules on
# shares of the buffer; on one H100 node a mix is fastest in the runtime
# model, the candidates a kernel can run are screened as generated code and
# the fastest screened compiled and timed at the step level: the fastest
# of them is written, verified; MSCCL XML refuses it. As generated code
# the compiled mixes beat NVLS alone by more than 10%, and the fastest of
# them is written (the limit leaves the screen uncut however loaded the
# machine: the search ends within seconds). Where no switch reduces, the
# flag is refused.
ccsynth_expect(synth-in-network-mix RC 0 FILE synth-in-network.json
  MATCH "NCCL nvls +[0-9.]+ us" "best: nvls 80% \\+ (ring|synthesized) 20%"
        "as generated code \\(compile --target cuda, step level; what runs; 9 of 9 candidates without IB SHARP screened[^\n]*\n( +nvls [0-9]+% \\+ (ring|synthesized) [0-9]+% +[0-9.]+ us +[0-9.]+ GB/s +1\\.[1-9][0-9]*x[^\n]*\n)+  the in-network schedule nvls [0-9]+% \\+ (ring|synthesized) [0-9]+% was written"
        "wrote .*synth-in-network.json \\(verified\\): the in-network schedule"
  CMD ${CC} synth --topo dgx-h100 --collective allreduce --time-limit 30
      --size 64M --no-step-level -q -o ${E2E_OUT}/synth-in-network.json
      --in-network)
# Where a switch reduces, the in-network algorithms are weighed without
# being asked (the fast choice); --no-in-network leaves them out, and
# asking for both is refused.
ccsynth_expect(synth-in-network-by-default RC 0 FILE synth-nvls-default.json
  MATCH "in-network at 64M" "wrote .*synth-nvls-default.json \\(verified\\)"
  CMD ${CC} synth --topo dgx-h100 --collective allgather --time-limit 5
      --size 64M --no-step-level -q -o ${E2E_OUT}/synth-nvls-default.json)
ccsynth_expect(synth-no-in-network RC 0 FILE synth-p2p.json
  NOMATCH "in-network at"
  MATCH "wrote .*synth-p2p.json \\(verified\\)"
  CMD ${CC} synth --topo dgx-h100 --collective allgather --time-limit 5
      --size 64M --no-step-level -q --no-in-network
      -o ${E2E_OUT}/synth-p2p.json)
ccsynth_expect(synth-in-network-both-flags RC 2
  MATCH "--in-network and --no-in-network: give one or the other"
  CMD ${CC} synth --topo dgx-h100 --collective allgather --in-network
      --no-in-network -o ${E2E_OUT}/never-written-both.json)
if(CCSYNTH_ENABLE_MLIR)
  ccsynth_expect(synth-in-network-compile-refused RC 1
    MATCH "synth-in-network.json:[0-9]+:[0-9]+: error: .*MSCCL XML has no switch operations"
    CMD ${CC} compile ${E2E_OUT}/synth-in-network.json
        -o ${E2E_OUT}/never-written-in-network.xml)
  set_tests_properties(e2e:synth-in-network-compile-refused
    PROPERTIES DEPENDS e2e:synth-in-network-mix)
endif()
# Four H100 nodes whose network does not reduce: ccsynth's NVLS with rail
# rings or exchanges beats NCCL's NVLS-tree in the runtime model and as
# generated code, and is written.
ccsynth_expect(synth-in-network-rails RC 0 FILE synth-in-network-rails.json
  MATCH "NCCL nvls +[0-9.]+ us"
        "ccsynth nvls-rails +[0-9.]+ us +[0-9.]+ GB/s +1\\.[1-9][0-9]*x NCCL's best"
        "as generated code [^\n]*\n( +[^\n]*\n)* +nvls-rails(-direct)?-phased +[0-9.]+ us +[0-9.]+ GB/s +1\\.[1-9][0-9]*x"
        "the in-network schedule nvls-rails[^\n]* was written"
  CMD ${CC} synth --topo ndv5x4 --collective allreduce --time-limit 4
      --no-step-level -q -o ${E2E_OUT}/synth-in-network-rails.json --in-network)
ccsynth_expect(synth-in-network-not-applicable RC 2
  MATCH "--in-network: no in-network algorithm applies to allreduce on 'dgx-a100'"
  CMD ${CC} synth --topo dgx-a100 --collective allreduce --in-network
      -o ${E2E_OUT}/never-written-in-network.json)
