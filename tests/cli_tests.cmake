# End-to-end tests of the attnsim command line: exit codes 0 (ok), 2 (bad input, with file,
# JSON path and expectation), 3 (deadlock / barrier misuse), and the files it writes.
set(ATTNSIM_BIN ${PROJECT_BINARY_DIR}/attnsim)
set(FA4 ${PROJECT_SOURCE_DIR}/schedules/fa4_sm100.json)
set(TS ${CMAKE_CURRENT_SOURCE_DIR}/schedules)
set(OUTDIR ${CMAKE_CURRENT_BINARY_DIR})

# GPU: the command may exit 77 (no usable GPU); the test is then reported as skipped, with the
# command's reason in its output.
function(attnsim_cli_test name rc regex)
  cmake_parse_arguments(T "GPU" "FILE" "ARGS" ${ARGN})
  string(REPLACE ";" "|" cmd "${ATTNSIM_BIN};${T_ARGS}")  # run_cli.cmake splits on |
  add_test(NAME cli.${name}
           COMMAND ${CMAKE_COMMAND} "-DCMD=${cmd}" -DEXPECT_RC=${rc} "-DEXPECT_REGEX=${regex}" "-DEXPECT_FILE=${T_FILE}"
                   -DALLOW_SKIP=${T_GPU} -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake)
  if(T_GPU)
    set_tests_properties(cli.${name} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED: ")
  endif()
endfunction()

attnsim_cli_test(default_run 0 "predicted time +[0-9.]+ us.*bottleneck.*SOFT0.*TC"
  ARGS simulate ${FA4} --hw b200 --trace ${OUTDIR}/default.trace.json --svg ${OUTDIR}/default.svg
  FILE ${OUTDIR}/default.trace.json)
attnsim_cli_test(json_keys 0 "\"time_us\": [0-9.]+,.*\"tflops\": [0-9.]+,.*\"bottleneck\": \""
  ARGS simulate ${FA4} --hw b200 --json --seqlen 2048)
attnsim_cli_test(causal_lpt 0 "LPT single-tile"
  ARGS simulate ${FA4} --hw b200 --causal --seqlen 2048 --no-timeline)
# calibrate --costs: a smem_beside_async result gives final_o's slowdown while copies land (dry run).
attnsim_cli_test(calibrate_copies_landing 0 "final_o while copies land.*elements +alone +beside SS +beside RS[^0-9]+32 +1\\.33"
  ARGS calibrate ${PROJECT_SOURCE_DIR}/configs/measured/h200/smem_beside_async.json
       --costs ${PROJECT_SOURCE_DIR}/configs/costs/sm90_softmax.json --dry-run)
# calibrate --costs: a load_warp result gives the load warp's own time per instance (dry run).
attnsim_cli_test(calibrate_load_warp 0 "the load warp beside the softmax.*hd128 +533 \\( +410\\) +424 +869 \\( +548\\) +383"
  ARGS calibrate ${PROJECT_SOURCE_DIR}/configs/measured/h200/load_warp.json
       --costs ${PROJECT_SOURCE_DIR}/configs/costs/sm90_softmax.json --dry-run)
# calibrate --costs --blocks: only the named blocks of a softmax_block result (dry run); a block
# the result does not time is refused, naming it.
attnsim_cli_test(calibrate_blocks_only 0 "duty SS/RS +shapes\n  softmax_max_conditional +32 +212\\.0 +306\\.7 +281\\.6  0\\.82/0\\.82"
  ARGS calibrate ${PROJECT_SOURCE_DIR}/configs/measured/h200/softmax_block.json
       --costs ${PROJECT_SOURCE_DIR}/configs/costs/sm90_softmax.json --blocks softmax_max_conditional --dry-run)
attnsim_cli_test(calibrate_blocks_unknown 2 "softmax_block.json: /results/shapes: expected a shape timing block 'pack_q' \\(--blocks\\)"
  ARGS calibrate ${PROJECT_SOURCE_DIR}/configs/measured/h200/softmax_block.json
       --costs ${PROJECT_SOURCE_DIR}/configs/costs/sm90_softmax.json --blocks pack_q --dry-run)
attnsim_cli_test(calibrate_costs_wrong_benchmark 2 "wgmma.json: /benchmark: expected a kernels/microbench softmax_block, smem_beside_async or load_warp result"
  ARGS calibrate ${PROJECT_SOURCE_DIR}/configs/measured/h200/wgmma.json
       --costs ${PROJECT_SOURCE_DIR}/configs/costs/sm90_softmax.json --dry-run)
attnsim_cli_test(explicit_copies_landing_below_one 2 "copies_landing.json: /warps/2/program/0/measured/while_copies_land: expected \\[alone, beside SS, beside RS\\]: three slowdowns >= 1"
  ARGS simulate ${TS}/copies_landing.json --hw h200 --no-timeline
       --set "/warps/2/program/0/measured/while_copies_land=[0.5,1,1]")
attnsim_cli_test(explicit_schedule 0 "one CTA"
  ARGS simulate ${TS}/pc_2stage.json --hw h100_sxm --no-timeline)
attnsim_cli_test(malformed_json 2 "bad_malformed.json: /arch: malformed JSON at line 4, column 17: unexpected '\"warps\"': expected ',' or '}'"
  ARGS simulate ${TS}/bad_malformed.json --hw b200)
attnsim_cli_test(unknown_field 2 "fa4_sm100.json: /tile/m_blok: unknown field"
  ARGS simulate ${FA4} --hw b200 --set /tile/m_blok=128)
attnsim_cli_test(missing_field 2 "bad_missing_warps.json: /warps: missing required field"
  ARGS simulate ${TS}/bad_missing_warps.json --hw b200)
attnsim_cli_test(out_of_range 2 "fa4_sm100.json: /q_stage: expected an integer in \\[1, 4\\], got 0"
  ARGS simulate ${FA4} --hw b200 --set /q_stage=0)
attnsim_cli_test(tmem_overflow 2 "/tmem/O1: TMEM overflow"
  ARGS simulate ${FA4} --hw b200 --set /tmem/O1/start=448)
attnsim_cli_test(smem_overflow 2 "/kv_stage: SMEM overflow"
  ARGS simulate ${FA4} --hw b200 --set /kv_stage=7)
attnsim_cli_test(register_overflow 2 "/registers: register overflow"
  ARGS simulate ${FA4} --hw b200 --set "/registers={\"softmax\":192,\"correction\":192,\"other\":72}")
attnsim_cli_test(pipelines_derived 2 "/pipelines: fa4_sm100 derives its pipelines"
  ARGS simulate ${FA4} --hw b200 --set "/pipelines={}")
attnsim_cli_test(sm90_refused 2 "/arch: this schedule needs SM100"
  ARGS simulate ${FA4} --hw h100_sxm)
attnsim_cli_test(unknown_hw 2 "no such hardware config"
  ARGS simulate ${FA4} --hw b100)
attnsim_cli_test(bad_problem 2 "/kv_heads: expected a divisor of heads"
  ARGS simulate ${FA4} --hw b200 --kv-heads 5)
attnsim_cli_test(bad_flag 2 "--frobnicate"
  ARGS simulate ${FA4} --frobnicate)
attnsim_cli_test(deadlock 3 "deadlock at cycle.*wait-for cycle: ping w0 \\[b.full\\[0\\]\\] -> pong w1"
  ARGS simulate ${TS}/deadlock_cycle.json --hw b200)

# explore / explain
set(SMALL ${CMAKE_CURRENT_SOURCE_DIR}/sweeps/small.json)
attnsim_cli_test(explore_small 0 "grid 16 candidates.*smem +8.*rank +geomean TF.*best_schedule.json"
  ARGS explore ${SMALL} --out ${OUTDIR}/explore_small FILE ${OUTDIR}/explore_small/best_schedule.json)
attnsim_cli_test(explore_best_simulates 0 "attnsim: small_best on B200.*predicted time"
  ARGS simulate ${OUTDIR}/explore_small/best_schedule.json --hw b200 --no-timeline)
set_tests_properties(cli.explore_small PROPERTIES FIXTURES_SETUP explore_small)
set_tests_properties(cli.explore_best_simulates PROPERTIES FIXTURES_REQUIRED explore_small)
attnsim_cli_test(explore_bad_sweep 2 "bad_field.json: /objektive: unknown field"
  ARGS explore ${CMAKE_CURRENT_SOURCE_DIR}/sweeps/bad_field.json)
# Ctrl-C: stop cleanly, keep finished rows, exit 130.
add_test(NAME cli.explore_interrupted
         COMMAND ${CMAKE_COMMAND} "-DCMD=timeout|--preserve-status|-s|INT|3|${ATTNSIM_BIN}|explore|${PROJECT_SOURCE_DIR}/configs/sweeps/fa4_b200.json|--out|${OUTDIR}/explore_int|--quiet"
                 -DEXPECT_RC=130 "-DEXPECT_REGEX=interrupted, finished rows kept" -DEXPECT_FILE=${OUTDIR}/explore_int/results.csv
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake)
attnsim_cli_test(explain 0 "Why 2 Q stages\\?.*q_stage_1.*before: fa4_sm100"
  ARGS explain ${FA4} --hw b200 --seqlen 2048)
# fa3_sm90 at head_dim 256: the conditional O rescale is a design choice explain switches off.
attnsim_cli_test(explain_fa3_rescale 0 "What does the conditional O rescale \\(threshold 2\\^8\\) buy\\? +unconditional_rescale +[0-9.]+ +[0-9]+ +\\+[0-9.]+%"
  ARGS explain ${PROJECT_SOURCE_DIR}/schedules/fa3_sm90.json --hw h200 --head-dim 256 --seqlen 4096 --batch 8 --non-causal --no-timeline)

# Hardening (issue 13): each class of bad input a user hit exits 2 with the file, the JSON path
# and what was expected, in our words; nothing crashes, prints library text or runs unbounded.
set(BI ${CMAKE_CURRENT_SOURCE_DIR}/bad_inputs)
attnsim_cli_test(deep_nesting_schedule 2
  "deep_schedule.json: /pipelines/buf/empty_count: arrays and objects nested more than 64 levels deep \\(at line 6, column 131\\): expected at most 64 levels"
  ARGS simulate ${BI}/deep_schedule.json --hw h100_sxm)
attnsim_cli_test(deep_nesting_hw 2 "deep_hw.json: /constants/mbarrier_latency/value: arrays and objects nested more than 64"
  ARGS simulate ${TS}/pc_1stage.json --hw ${BI}/deep_hw.json)
attnsim_cli_test(deep_nesting_sweep 2 "deep_sweep.json: /problems/0/label: arrays and objects nested more than 64"
  ARGS explore ${BI}/deep_sweep.json --quiet --out ${OUTDIR}/deep_sweep)
attnsim_cli_test(number_overflow_hw 2
  "overflow_hw.json: /constants/mbarrier_latency/value: malformed JSON at line 28, column 35: number 1e400 is out of range: expected a number within"
  ARGS simulate ${TS}/pc_1stage.json --hw ${BI}/overflow_hw.json)
attnsim_cli_test(number_overflow_schedule 2 "overflow_schedule.json: /warps/0/program/0/body/1/fma_lanes: malformed JSON.*out of range"
  ARGS simulate ${BI}/overflow_schedule.json --hw h100_sxm)
attnsim_cli_test(sweep_axis_without_slash 2
  "sweep_axis_no_slash.json: /axes/q_stage: .*expected a JSON pointer such as /kv_stage.*\\(it starts with '/'\\), got \"q_stage\""
  ARGS explore ${BI}/sweep_axis_no_slash.json --quiet --out ${OUTDIR}/axis_no_slash)
attnsim_cli_test(variant_wrong_type 2 "variants_wrong_type.json: /variants/one_stage: expected an object, got string"
  ARGS simulate ${BI}/variants_wrong_type.json --variant one_stage --hw h100_sxm)
attnsim_cli_test(explain_variant_wrong_type 2 "variants_wrong_type.json: /variants/one_stage: expected an object, got string"
  ARGS explain ${BI}/variants_wrong_type.json --hw h100_sxm)
attnsim_cli_test(sweep_duplicate_key 2 "sweep_duplicate_name.json: /name: duplicate key \"name\": expected each key at most once"
  ARGS explore ${BI}/sweep_duplicate_name.json --quiet --out ${OUTDIR}/dup_name)
attnsim_cli_test(blackflash_head_dim 2
  "blackflash.json: /family: BlackFlash is written for head_dim 64 .*expected a problem with head_dim and head_dim_v 64"
  ARGS simulate ${PROJECT_SOURCE_DIR}/schedules/blackflash.json --hw h100_sxm)
# An explicit two-warp schedule is charged its own CTA's HBM traffic (was 28x the bandwidth).
attnsim_cli_test(explicit_hbm_fraction 0 "\"hbm\": 0(\\.[0-9e-]+)?[,\n]"
  ARGS simulate ${TS}/tma_mma.json --hw h100_sxm --json)
# Fuzz findings reachable from the command line: FA3 with two KV blocks (default window was empty,
# exit 2 "ascii timeline: empty window"), FA4 with seqlen_k within one KV block (read past the
# rescale mask).
attnsim_cli_test(fa3_two_blocks_timeline 0 "predicted time.*TIME \\(us\\)"
  ARGS simulate ${PROJECT_SOURCE_DIR}/schedules/fa3_sm90.json --hw h100_sxm --batch 1 --heads 1 --seqlen 128 --seqlen-k 256 --head-dim 64)
attnsim_cli_test(fa4_one_block_causal 0 "predicted time"
  ARGS simulate ${FA4} --hw b200 --seqlen 128 --head-dim 64 --causal --no-timeline)
# Budgets: a prediction that would take long stops at once with the flag to raise.
attnsim_cli_test(budget_tiles 2
  "fa2_sm80.json: /: expected a problem of at most --max-tiles 4194304 tiles; fa2_sm80 places 33554432 tiles.*raise --max-tiles"
  ARGS simulate ${PROJECT_SOURCE_DIR}/schedules/fa2_sm80.json --hw h200 --heads 65536)
attnsim_cli_test(budget_events 2 "fa2_sm80.json: /: expected a prediction within --max-events 1000000 simulation events.*raise --max-events"
  ARGS simulate ${PROJECT_SOURCE_DIR}/schedules/fa2_sm80.json --hw h200 --max-events 1000000)
attnsim_cli_test(budget_explicit_repeats 2 "repeat_explosion.json: /warps/0/program/0/body/0: the programs expand to more than 10000000 ops"
  ARGS simulate ${BI}/repeat_explosion.json --hw h100_sxm)
attnsim_cli_test(budget_sweep_problem 0 "grid 16 candidates.*budget +3"
  ARGS explore ${BI}/sweep_huge_problem.json --quiet --out ${OUTDIR}/huge_problem)
attnsim_cli_test(budget_sweep_candidates 2 "small.json: /axes: expected a grid of at most --max-candidates 8 candidates; the axes make 16"
  ARGS explore ${SMALL} --max-candidates 8 --quiet --out ${OUTDIR}/max_candidates)

# --version: version, commit, schedule families, kernel families compiled in, GPU architectures, data directory.
attnsim_cli_test(version 0
  "attnsim [0-9]+\\.[0-9]+\\.[0-9]+\ncommit: ([0-9a-f]+(-dirty)?|unknown)\nschedule families: blackflash, explicit, fa2_sm80, fa3_sm90, fa4_sm100\nkernels: (none|blackflash, fa2_sm80, fa3_sm90, fa4_sm100 \\([0-9]+ instances, sm_90a, sm_100a; blackflash: sm_90a(, sm_120a)?\\))\nGPU architectures: "
  ARGS --version)
# cmake --install into a temporary prefix; the installed binary, run from elsewhere, finds its data.
add_test(NAME install.prefix_run_outside_tree
         COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DWORK_DIR=${OUTDIR}/install_test
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/install_test.cmake)

# run / validate (real SM90 kernels). Without a GPU they exit 77, which ctest reports as skipped
# (the GPU option below); on an H100/H200 they run the kernels. What needs no GPU is tested as usual.
if(ATTNSIM_HAVE_CUDA)
  set(FA3 ${PROJECT_SOURCE_DIR}/schedules/fa3_sm90.json)
  attnsim_cli_test(run_list 0 "kernels compiled into this build.*hd128 m128 n128 kv2 pingpong overlap reg 240/24 own_o l2 8MiB +needs sm_90a +schedules/fa3_sm90.json \\(base\\) hd128.*fa4_sm100 hd128 q2 kv3 cg1 splitP96 emu16/4/1 rescale>8 corrwg reg 192/72/56 tmem512 +needs sm_100a \\(an SM100 GPU such as a B200, not yet run on one\\) schedules/fa4_sm100.json \\(base\\) hd128 causal"
    ARGS run --list)
  # fa4_sm100 (kernels/sm100): 2-CTA MMA below head_dim 128 is refused with the reason; a compiled
  # instance needs an SM100 GPU, so elsewhere it is skipped (77) with the reason.
  set(FA4 ${PROJECT_SOURCE_DIR}/schedules/fa4_sm100.json)
  attnsim_cli_test(run_fa4_two_cta_hd64 2 "fa4_sm100.json: /: fa4_sm100 has no real kernel for .*cta_group 2 at head_dim 64: kernels/sm100 builds 2-CTA tcgen05.mma for head_dim 128 only"
    ARGS run ${FA4} --head-dim 64 --seqlen 4096 --non-causal --set /cta_group=2)
  # The base schedule's non-causal hd128 problems resolve to the 2-CTA kernel (2x1 clusters).
  attnsim_cli_test(run_fa4_two_cta_gpu 0 "fa4_sm100 hd128 q2 kv6 cg2 .*correctness .*: pass.*measured .*TFLOPS" GPU
    ARGS run ${FA4} --head-dim 128 --seqlen 2048 --batch 2 --non-causal --check)
  attnsim_cli_test(run_fa4_not_compiled 2 "fa4_sm100.json: /: fa4_sm100 variant no_split_p resolves for head_dim 128 to the SM100 kernel \\[fa4_sm100 hd128 q2 kv3 cg1 nosplitP .*ATTNSIM_SM100_VARIANTS=all"
    ARGS run ${FA4} --variant no_split_p --head-dim 128 --seqlen 4096 --causal)
  attnsim_cli_test(run_fa4_gpu 0 "correctness .*: pass.*measured .*TFLOPS" GPU
    ARGS run ${FA4} --head-dim 128 --seqlen 2048 --batch 2 --causal --check)
  attnsim_cli_test(run_not_compiled 2 "fa3_sm90.json: /: fa3_sm90 resolves for head_dim 64 to the kernel \\[fa3_sm90 hd64 m192 n128 kv4 pingpong overlap reg 160/32 own_o l2 8MiB\\], which this build did not compile.*declare it as a variant"
    ARGS run ${FA3} --head-dim 64 --set /kv_stage=4)
  # A variant whose kernels come with a sweep's build says which sweep (the default build has none).
  if(NOT ATTNSIM_KERNEL_SWEEPS)
    attnsim_cli_test(run_variant_from_sweep 2 "fa3_sm90.json: /variants/unconditional_rescale: .*\\[fa3_sm90 hd256 m128 n80 .*\\], which this build did not compile.*ATTNSIM_KERNEL_SWEEPS=configs/sweeps/fa3_conditional_rescale.json"
      ARGS run ${FA3} --variant unconditional_rescale --head-dim 256 --seqlen 4096 --non-causal)
  endif()
  attnsim_cli_test(run_smem_overflow 2 "fa3_sm90.json: /kv_stage: SMEM overflow"
    ARGS run ${FA3} --variant kv_stage_3 --head-dim 256)
  attnsim_cli_test(run_unsupported 2 "no_warp_specialization has no real kernel.*warp_specialization false"
    ARGS run ${FA3} --variant no_warp_specialization)
  attnsim_cli_test(run_gpu 0 "correctness .*: pass.*measured .*TFLOPS.*predicted .*traced.*warpgroup phase.*warps 4 -> 8: measured [-+][0-9]+ ns, predicted [-+][0-9]+ ns" GPU
    ARGS run ${FA3} --head-dim 128 --seqlen 2048 --batch 2 --check --trace ${OUTDIR}/run_measured.json
         --predicted-trace ${OUTDIR}/run_predicted.json)
  attnsim_cli_test(validate_gpu 0 "cases measured: MAPE.*per change against the base schedule.*per-op acceptance" GPU
    ARGS validate ${FA3} --variants base,no_pingpong --out ${OUTDIR}/validate)
  # blackflash (kernels/blackflash): every variant is compiled and listed; its head_dim is refused
  # before the GPU is looked for; on a GPU, run checks and traces it.
  set(BF ${PROJECT_SOURCE_DIR}/schedules/blackflash.json)
  attnsim_cli_test(run_list_blackflash 0 "blackflash hd64 kv2 p_over_k reg 128 +needs sm_90a +schedules/blackflash.json \\(base\\) hd64.*blackflash hd64 kv2 p_over_k reg 112 +needs sm_90a +schedules/blackflash.json registers_112 hd64"
    ARGS run --list)
  attnsim_cli_test(run_blackflash_head_dim 2 "blackflash.json: /family: BlackFlash is written for head_dim 64"
    ARGS run ${BF} --head-dim 128)
  attnsim_cli_test(run_blackflash_gpu 0 "kernel \\[blackflash hd64 kv2 p_over_k reg 128\\].*correctness .*: pass.*measured .*TFLOPS.*predicted .*traced" GPU
    ARGS run ${BF} --head-dim 64 --seqlen 1000 --batch 2 --causal --check --trace ${OUTDIR}/run_bf_measured.json)
  attnsim_cli_test(validate_blackflash_gpu 0 "cases measured: MAPE.*per-op acceptance" GPU
    ARGS validate ${BF} --variants base,single_buffer --problems ${PROJECT_SOURCE_DIR}/configs/validation/problems_blackflash.json
         --out ${OUTDIR}/validate_bf)
else()
  attnsim_cli_test(run_without_cuda 2 "built without a CUDA compiler" ARGS run ${PROJECT_SOURCE_DIR}/schedules/fa3_sm90.json)
endif()

# bench (our SM90 kernel beside cuDNN). Inputs are checked before the GPU is looked for; without a
# GPU (or built without CUDA) it exits 77 with the reason. CUDA_VISIBLE_DEVICES= hides any GPU, so
# the skip path is tested on GPU machines too.
set(BENCH_SKIP "SKIPPED: 48 problems to benchmark, but no GPU to run them on: ")
if(ATTNSIM_HAVE_CUDA)
  string(APPEND BENCH_SKIP "(no usable CUDA driver or device|no CUDA device)")
else()
  string(APPEND BENCH_SKIP "this attnsim was built without a CUDA compiler, so it has no kernels and no GPU access")
endif()
add_test(NAME cli.bench_no_gpu
         COMMAND ${CMAKE_COMMAND} "-DCMD=${CMAKE_COMMAND}|-E|env|CUDA_VISIBLE_DEVICES=|${ATTNSIM_BIN}|bench|--csv|${OUTDIR}/bench_skip/out.csv"
                 -DEXPECT_RC=77 "-DEXPECT_REGEX=^${BENCH_SKIP}" -P ${CMAKE_CURRENT_SOURCE_DIR}/run_cli.cmake)
attnsim_cli_test(bench_bad_problem_set 2 "default.json: /problems: expected a non-empty array of problems"
  ARGS bench --problems ${PROJECT_SOURCE_DIR}/configs/problems/default.json)
attnsim_cli_test(bench_unknown_variant 2 "fa3_sm90.json: .*no_such_variant"
  ARGS bench --variant no_such_variant)
attnsim_cli_test(bench_bad_reps 2 "--reps: Value 0 not in range"
  ARGS bench --reps 0)
if(ATTNSIM_HAVE_CUDA)
  attnsim_cli_test(bench_gpu 0 "attnsim bench: fa3_sm90 against cuDNN on .*hd128 s2k b2 +2 +16/16 +2048 +128 +no +[0-9.]+ +[0-9.]+.*hd96 s1k b2 .* ours: .*(geomean ours/cuDNN|ours/cuDNN: no problem)" GPU
    ARGS bench --problems ${CMAKE_CURRENT_SOURCE_DIR}/data/bench_small.json --reps 3 --launches 2 --warmup 1
         --out ${OUTDIR}/bench_gpu --csv ${OUTDIR}/bench_gpu/bench.csv
    FILE ${OUTDIR}/bench_gpu/bench.csv)
endif()

# kernels/sm90/sanitize_all.py (compute-sanitizer over every compiled sm_90a kernel, on a GPU
# machine): without a GPU its --dry-run still checks that the problem it derives for each kernel
# selects that kernel (fails with WRONG KERNEL otherwise).
find_program(ATTNSIM_PYTHON3 python3)
if(ATTNSIM_HAVE_CUDA AND ATTNSIM_PYTHON3)
  add_test(NAME kernels.sanitize_all_selection
           COMMAND ${ATTNSIM_PYTHON3} ${PROJECT_SOURCE_DIR}/kernels/sm90/sanitize_all.py --attnsim ${ATTNSIM_BIN} --dry-run
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(kernels.sanitize_all_selection PROPERTIES
                       PASS_REGULAR_EXPRESSION "[1-9][0-9]* kernels, 0 sanitizer runs, 0 failures")
  # --skip-ok reads the committed outputs and counts what a GPU run would still have to do.
  file(GLOB ATTNSIM_SANITIZER_LOGS ${PROJECT_SOURCE_DIR}/configs/validation/h100_sxm/sanitize_all/*.txt)
  add_test(NAME kernels.sanitize_all_resume
           COMMAND ${ATTNSIM_PYTHON3} ${PROJECT_SOURCE_DIR}/kernels/sm90/sanitize_all.py --attnsim ${ATTNSIM_BIN} --dry-run
                   --skip-ok ${ATTNSIM_SANITIZER_LOGS}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(kernels.sanitize_all_resume PROPERTIES
                       PASS_REGULAR_EXPRESSION "[1-9][0-9]* kernels, 0 sanitizer runs, 0 failures, [0-9]+ runs to go after --skip-ok")
endif()

# kernels/sm90/ncu_tile_costs.py (the plain kernel's time per op from ncu's PC samples) on
# committed ncu source pages: the split of configs/validation/h200/ncu_plain_per_op's README, a
# variant against its base, the kernel beside the simulator's trace; a file without ncu's table,
# or a "trace" that is not one, is refused by name.
if(ATTNSIM_PYTHON3)
  # One run of the script on FILE (relative to the project root) with ARGS; its output must match EXPECT.
  function(attnsim_ncu_tile_costs_test name file expect)
    add_test(NAME ${name}
             COMMAND ${ATTNSIM_PYTHON3} ${PROJECT_SOURCE_DIR}/kernels/sm90/ncu_tile_costs.py ${file} ${ARGN}
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${expect}")
  endfunction()
  set(_ncu configs/validation/h200/ncu_plain_per_op)
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs ${_ncu}/src_hd64_s512_b32.csv.gz
    "wait pipeline_q.empty +865 .*tile bookkeeping +581.*wait pipeline_q.full +[0-9]+ .*final_o +492.*mma_pv \\(dispatch\\) +196.*head [+] steps x step [+] tail +7838 "
    --kernel-us 95.6 --tiles-per-cta 11.636)
  # hd256: O staged in the V ring, the wait for PV before the softmax.
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_hd256 ${_ncu}/src_hd256_s1024_b16.csv.gz
    "tile bookkeeping +672 .*final_o +791 .*mma_qk \\(dispatch\\) +246 .*wait wgmma \\(PV done\\) +366 "
    --kernel-us 391.2 --tiles-per-cta 15.515)
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_not_ncu README.md "README.md: no ncu source table"
    --kernel-us 1 --tiles-per-cta 1)
  # The launch's time and tiles per CTA read from what attnsim run printed above the table.
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_page_defaults ${_ncu}/src_hd64_s512_b32.csv.gz
    "95.6 us, 11.64 tiles per CTA .*mma_pv \\(dispatch\\) +196")
  # Against the simulator's trace of the same problem (a fixture: the model of the commit that wrote it).
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_predicted ${_ncu}/src_hd64_s512_b32.csv.gz
    "1.544 GHz.*1.979 GHz probed.*mma_pv \\(dispatch\\) +387 +284 +0.73 .*final_o +974 +502 +0.52"
    --predicted ${_ncu}/predicted_hd64_s512_b32.json.gz)
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_predicted_not_trace ${_ncu}/src_hd64_s512_b32.csv.gz
    "h200.json: no otherData.clock_ghz" --predicted configs/hw/h200.json)
  # A schedule change against its base (configs/validation/h200/ncu_plain_changes): without
  # intra-warpgroup overlap the QK's wait before the softmax appears and the step grows; with O in
  # Q's buffer the next tile's Q wait.
  set(_chg configs/validation/h200/ncu_plain_changes)
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_against
    ${_chg}/src_no_intra_warpgroup_overlap_hd256_s4096_b4.csv.gz
    "LSE and tile loop .*wait for the last PV +0 +376 +-376.*wait wgmma \\(QK done\\) +311 +6 +[+]305.*step +1818 +1652 +[+]166"
    --kernel-us 1505.2 --tiles-per-cta 15.515 --against ${_chg}/src_base_hd256_s4096_b4.csv.gz --against-us 1377.5)
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_against_q ${_chg}/src_o_in_q_buffer_hd128_s8192_b2.csv.gz
    "wait pipeline_q.full +1337 +147 +[+]1189.*mma_pv \\(dispatch\\) +297 +180 +[+]117"
    --kernel-us 1575.4 --tiles-per-cta 15.515 --against ${_chg}/src_base_hd128_s8192_b2.csv.gz --against-us 1513.2)
  # BAR.SYNC defers its blocking to the K wait's try_wait: those barrier stalls count in the turn.
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_turn ${_chg}/src_base_hd128_s8192_b2.csv.gz
    "wait bar.pingpong \\(turn\\) +71 .*wait pipeline_k.full +39 "
    --kernel-us 1513.2 --tiles-per-cta 15.515)
  # The dynamic scheduler's kernel: its load warp is not split, its consumers are.
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_dynamic ${_chg}/src_dynamic_lpt_hd128_s8192_b2.csv.gz
    "load warp \\(not split: 5 arrive.expect_tx.*wait pipeline_q.full +197 .*step +1567 "
    --kernel-us 1588.5 --tiles-per-cta 15.515)
  # Both launches' times read from their pages.
  attnsim_ncu_tile_costs_test(kernels.ncu_tile_costs_against_page ${_chg}/src_no_pingpong_hd64_s4096_b8.csv.gz
    "1046.5 us, 21.33 tiles per CTA.*against .*src_base_hd64_s4096_b8.csv.gz: 1025.1 us"
    --against ${_chg}/src_base_hd64_s4096_b8.csv.gz)
endif()

# fidelity: the committed validation measurements (configs/validation/<gpu>/<folder> with a fidelity.json)
# re-predicted with the current model and checked against the baseline committed beside them
# (fidelity.json): fails when MAPE or max |error| grows by more than 0.05 points or Spearman drops
# by more than 0.005. No GPU; about 50 s for the 61 folders on two idle cores (2026-12-01). A model change that moves the figures on purpose
# runs `attnsim fidelity --update` and commits the new fidelity.json files with it.
# --no-ops: the per-op table, which the baseline does not hold, is left out with the traced twins'
# simulations it needs (about 45% of the CPU time; cli.fidelity_regression_detected below runs it).
add_test(NAME fidelity.regression COMMAND ${ATTNSIM_BIN} fidelity --no-ops)
set_tests_properties(fidelity.regression PROPERTIES TIMEOUT 600)
# --no-ops: the end-to-end figures and the baseline check, no per-op table.
attnsim_cli_test(fidelity_no_ops 1 "MAPE +[0-9.]+%, max \\|error\\|.*per op: not compared \\(--no-ops\\)"
  ARGS fidelity ${CMAKE_CURRENT_SOURCE_DIR}/fidelity/h100_sxm/fa3_sm90_validate --no-ops)
# A baseline no model reaches (tests/fidelity/): the regression is reported, by figure, and exits 1.
attnsim_cli_test(fidelity_regression_detected 1
  "\"figure\": \"MAPE\".*\"ok\": false.*MAPE regressed: baseline 0.0000%, now [0-9.]+% \\(grew by"
  ARGS fidelity ${CMAKE_CURRENT_SOURCE_DIR}/fidelity/h100_sxm/fa3_sm90_validate --json)

# replay: the gemm_turn and softmax_pair microbenchmarks (the SM90 kernel's own GEMM dispatch and
# softmax blocks, timed on an H200) predicted case by case beside what they measured; another
# benchmark's result is refused.
attnsim_cli_test(replay_gemm_turn 0
  "hd128 +pingpong_delay_0 +1  qk_dispatch +477 +480 .*mean \\|error\\| per quantity"
  ARGS replay ${PROJECT_SOURCE_DIR}/configs/measured/h200/gemm_turn.json --hw h200)
attnsim_cli_test(replay_softmax_pair 0 "\"mean_abs_error_pct\": \\{[^}]*\"block\".*\"case\": \"leader_warpgroup_1/delay_4000\""
  ARGS replay ${PROJECT_SOURCE_DIR}/configs/measured/h200/softmax_pair.json --json)
# The model's accuracy on both replays is a tested property: each replay against the baseline
# committed beside its result (configs/measured/h200/*.replay.json), and a baseline no model reaches.
attnsim_cli_test(replay_baseline_gemm_turn 0 "no quantity's mean \\|error\\| grew"
  ARGS replay ${PROJECT_SOURCE_DIR}/configs/measured/h200/gemm_turn.json
       --baseline ${PROJECT_SOURCE_DIR}/configs/measured/h200/gemm_turn.replay.json)
attnsim_cli_test(replay_baseline_softmax_pair 0 "no quantity's mean \\|error\\| grew"
  ARGS replay ${PROJECT_SOURCE_DIR}/configs/measured/h200/softmax_pair.json
       --baseline ${PROJECT_SOURCE_DIR}/configs/measured/h200/softmax_pair.replay.json)
attnsim_cli_test(replay_regression_detected 1 "REGRESSED done: baseline 0.00%, now [0-9.]+% \\(grew by"
  ARGS replay ${PROJECT_SOURCE_DIR}/configs/measured/h200/gemm_turn.json
       --baseline ${CMAKE_CURRENT_SOURCE_DIR}/data/replay_zero_baseline.json)
attnsim_cli_test(replay_wrong_benchmark 2 "wgmma_share.json: /benchmark: expected a kernels/microbench result the model can replay: gemm_turn or softmax_pair"
  ARGS replay ${PROJECT_SOURCE_DIR}/configs/measured/h200/wgmma_share.json)
# simulate --traced: the kernel `attnsim run --trace` records (the row max before the PV wait at
# hd128); a schedule whose traced kernel runs the plain one's ops says so and predicts that.
attnsim_cli_test(simulate_traced 0 "predicted time +1902.[0-9] us"
  ARGS simulate ${PROJECT_SOURCE_DIR}/schedules/fa3_sm90.json --hw h200 --head-dim 128 --seqlen 8192 --batch 2
       --heads 16 --non-causal --no-timeline --traced)
attnsim_cli_test(simulate_traced_same 0 "traced kernel runs the plain kernel's ops"
  ARGS simulate ${FA4} --hw b200 --no-timeline --traced)
