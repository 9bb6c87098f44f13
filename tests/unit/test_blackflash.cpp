// The blackflash family against its real kernel (kernels/blackflash), without a GPU: the knobs a
// schedule resolves to, the SMEM the simulator charges (the kernel's own layout), the ops each
// warp runs (the spans the traced kernel records, in its order), and measured records mapped to
// the simulator's roles and barrier names.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "blackflash/fragments.h"
#include "blackflash/structure.h"
#include "common/trace_record.h"
#include "driver/simulate.hpp"
#include "lower/blackflash/blackflash_schedule.hpp"
#include "lower/builder.hpp"
#include "measure/measured_timeline.hpp"
#include "model/json_reader.hpp"
#include "test_support.hpp"

using namespace attnsim;

namespace {

std::string bf() { return test::root() + "/schedules/blackflash.json"; }
using test::h100;
Problem hd64(int seqlen = 1024) {
  Problem p = test::default_problem();
  p.head_dim = p.head_dim_v = 64;
  p.seqlen_q = p.seqlen_k = seqlen;
  p.batch = 1;
  return p;
}

/// The span keys the traced kernel records for a warp running `prog`: waits and bar.sync as
/// "wait <barrier>" (stage and phase dropped), compute blocks by op name; arrives and the TMA
/// copies themselves (unit tracks) record nothing on the warp.
std::vector<std::string> span_keys(const CtaProgram& cta, const WarpProgram& prog) {
  std::vector<std::string> out;
  for (const Op& op : prog.ops) {
    if (op.kind == OpKind::Wait || op.kind == OpKind::BarSync) {
      std::string b = cta.barriers.at(op.barrier).name;
      out.push_back("wait " + b.substr(0, b.find('[')));
    } else if (op.kind == OpKind::Compute) {
      out.push_back(attnsim_op_name(op.name));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("blackflash resolves to the kernels/blackflash knobs", "[blackflash][measure]") {
  const auto s = load_schedule(bf());
  const KernelChoice k = s->real_kernel(h100(), hd64());
  REQUIRE(k.supported);
  CHECK(k.knobs == AnyKernelKnobs{blackflash::KernelKnobs{64, 2, true, 128}});
  CHECK(k.scheduler == TileScheduler::Lpt);  // one CTA per Q tile, longest first
  CHECK(describe(k.knobs) == "blackflash hd64 kv2 p_over_k reg 128");
  CHECK(kernel_family(k.knobs) == "blackflash");
  CHECK(std::get<blackflash::KernelKnobs>(load_schedule(bf(), {}, "single_buffer")->real_kernel(h100(), hd64()).knobs)
            .kv_stage == 1);
  CHECK_FALSE(
      std::get<blackflash::KernelKnobs>(load_schedule(bf(), {}, "p_own_tile")->real_kernel(h100(), hd64()).knobs)
          .p_over_k);
  CHECK(std::get<blackflash::KernelKnobs>(load_schedule(bf(), {}, "registers_112")->real_kernel(h100(), hd64()).knobs)
            .registers == 112);
  Problem d128 = hd64();
  d128.head_dim = d128.head_dim_v = 128;
  CHECK_THAT(s->real_kernel(h100(), d128).why_not, Catch::Contains("head_dim = head_dim_v = 64 only"));
  CHECK_THROWS_WITH(load_schedule(bf(), {"/registers_per_thread=100"}), Catch::Contains("multiple of 8"));
}

TEST_CASE("blackflash SMEM and occupancy are the kernel's", "[blackflash]") {
  const Hardware hw = h100();
  // Q + 2 x (K + V) bf16 64 x 64 tiles, 5 mbarriers, 2 x 2 x 64 fp32 row statistics, 1024 B of
  // alignment slack for the 128B-swizzled tiles.
  CHECK(blackflash::smem_layout(2, true).bytes == 5 * 8192 + 5 * 8 + 1024 + 1024);
  CHECK(blackflash::smem_layout(2, false).bytes == blackflash::smem_layout(2, true).bytes + 8192);  // P's own tile
  // The traced kernel's trace slots are 16-byte vectors: aligned for every ring depth (at kv_stage
  // 2 the 40 B of mbarriers put them 8 B off, and the traced kernel faulted).
  for (int stages = 1; stages <= 8; ++stages)
    for (bool over_k : {true, false}) {
      const auto l = blackflash::smem_layout(stages, over_k, true);
      CHECK(l.trace % blackflash::kTraceSlotBytes == 0);
      CHECK(l.trace >= l.stats + 2 * 2 * blackflash::kTile * 4);
      CHECK(l.used == l.trace + blackflash::kTraceSlotBytes * blackflash::kWarps);
    }
  const auto base = load_schedule(bf());
  CHECK(base->resources(hw, hd64()).at("smem_bytes") == blackflash::smem_layout(2, true).bytes);
  CHECK(load_schedule(bf(), {}, "p_own_tile")->resources(hw, hd64()).at("smem_bytes") ==
        blackflash::smem_layout(2, false).bytes);
  // 288 threads x 128 registers: one CTA per SM. At 112 still one: registers are allocated per
  // SMSP (4 warps of 3584 in 16K), not per SM (ncu on an H100: "Block Limit Registers 1",
  // though 2 x 288 x 112 < 64K). At 96, 5 warps per SMSP: two CTAs.
  const Problem big = hd64(16384);
  CHECK(dynamic_cast<const blackflash::BlackFlashSchedule&>(*base).resolve(hw, big).occupancy == 1);
  const auto r112 = load_schedule(bf(), {}, "registers_112");
  CHECK(dynamic_cast<const blackflash::BlackFlashSchedule&>(*r112).resolve(hw, big).occupancy == 1);
  const auto r96 = load_schedule(bf(), {}, "registers_96");
  CHECK(dynamic_cast<const blackflash::BlackFlashSchedule&>(*r96).resolve(hw, big).occupancy == 2);
  Hardware small = hw;  // a GPU with less SMEM per CTA than the base layout takes (43048 B)
  small.smem_bytes_per_block = 40000;
  CHECK_THROWS_WITH(base->check(small, hd64()), Catch::Contains("SMEM overflow"));
  CHECK_NOTHROW(load_schedule(bf(), {}, "single_buffer")->check(small, hd64()));
}

TEST_CASE("blackflash warps run the ops the traced kernel records in its order", "[blackflash]") {
  const Hardware hw = h100();
  const auto s = load_schedule(bf());
  // One tile of 3 KV blocks, the last masked (a ragged or causal tail).
  const CtaProgram cta = s->lower(hw, hd64(), {TileWork{0, 64, 3, 1}});
  REQUIRE(cta.warps.size() == blackflash::kWarps);
  CHECK(cta.warps[0].role == blackflash::warp_role(0));
  // kernels/blackflash/load.cuh: load_q, then per block the empty wait and load_k (K and V).
  CHECK(span_keys(cta, cta.warps[0]) == std::vector<std::string>{"load_q", "wait mbar_kv.empty", "load_k",
                                                                 "wait mbar_kv.empty", "load_k", "wait mbar_kv.empty",
                                                                 "load_k"});
  // kernels/blackflash/consumer.cuh and epilogue.cuh, every consumer warp alike.
  std::vector<std::string> consumer = {"wait mbar_q.full"};
  for (int j = 0; j < 3; ++j) {
    for (const char* k :
         {"wait mbar_kv.full", "mma_qk", "softmax_max", "wait bar.consumers", "softmax_exp", "wait bar.consumers"})
      consumer.push_back(k);
    if (j > 0) consumer.push_back("rescale_o");  // nothing to rescale after the first block
    consumer.push_back("mma_pv");
  }
  for (const char* k : {"final_o", "wait bar.consumers", "store_o"}) consumer.push_back(k);
  for (int w = 1; w < blackflash::kWarps; ++w) {
    INFO("warp " << w);
    CHECK(cta.warps[w].role == blackflash::warp_role(w));
    const auto keys = span_keys(cta, cta.warps[w]);
    CHECK(keys == consumer);
    CHECK(keys.size() <= blackflash::trace_spans_per_tile(3));  // the traced kernel's record budget
  }
  // The mask costs only on the masked block (the kernel tests keys from first_masked on).
  const auto& ops = cta.warps[1].ops;
  std::vector<double> max_alu;
  for (const Op& op : ops)
    if (op.name == ATTNSIM_OP_SOFTMAX_MAX) max_alu.push_back(op.compute->work.alu_lanes);
  REQUIRE(max_alu.size() == 3);
  CHECK(max_alu[0] == max_alu[1]);
  CHECK(max_alu[2] > max_alu[1]);
}

TEST_CASE("blackflash measured records carry the simulator's roles and barrier names", "[blackflash][measure]") {
  // A traced blackflash launch as sm90::trace_kernel returns it: one CTA of 9 warps, warps 0 and 4
  // recording (--trace-warps first).
  sm90::MeasuredTrace t;
  t.knobs = blackflash::KernelKnobs{};
  t.warps_per_cta = blackflash::kWarps;
  t.cap = 4;
  t.records.assign(blackflash::kWarps * t.cap, attnsim_trace_record{});
  t.counts.assign(blackflash::kWarps, 0);
  auto rec = [](int op, uint32_t t0, uint32_t t1, int wait_on = ATTNSIM_WAIT_NONE, int stage = 0xff, int phase = 0xff) {
    attnsim_trace_record r{};
    r.op = static_cast<uint8_t>(op);
    r.wait_on = static_cast<uint8_t>(wait_on);
    r.stage = static_cast<uint8_t>(stage);
    r.phase = static_cast<uint8_t>(phase);
    r.block = 0;
    r.t0 = t0;
    r.t1 = t1;
    return r;
  };
  t.records[0] = rec(ATTNSIM_OP_LOAD_Q, 0, 10);
  t.records[1] = rec(ATTNSIM_OP_WAIT, 10, 12, ATTNSIM_WAIT_MBAR_KV_EMPTY, 0, 1);
  t.counts[0] = 2;
  t.records[4 * t.cap + 0] = rec(ATTNSIM_OP_WAIT, 0, 400, ATTNSIM_WAIT_MBAR_KV_FULL, 1, 0);
  t.records[4 * t.cap + 1] = rec(ATTNSIM_OP_MMA_QK, 400, 500);
  t.records[4 * t.cap + 2] = rec(ATTNSIM_OP_WAIT, 500, 520, ATTNSIM_WAIT_BAR_CONSUMERS);
  t.counts[4] = 3;
  t.ctas = {attnsim_cta_clock{0, 40000, 0, 20000, 3, 1}};
  const MeasuredCta m = measured_cta(t, 0, 1.5);
  REQUIRE(m.timeline.warps.size() == 2);
  CHECK(m.timeline.warps[0].role == "load");
  CHECK(m.timeline.warps[1].role == "consumer");
  CHECK(m.timeline.label_of(m.timeline.warps[0].spans[1]) == "mbar_kv.empty[0] phase 1");
  CHECK(m.timeline.label_of(m.timeline.warps[1].spans[0]) == "mbar_kv.full[1] phase 0");
  CHECK(m.timeline.label_of(m.timeline.warps[1].spans[2]) == "bar.consumers");
  // Every measured key is one the simulator's blackflash timeline has for the warps validate compares.
  const auto measured = op_means(m.timeline);
  const Prediction pred = predict(*load_schedule(bf()), h100(), hd64(512));
  const auto predicted = op_means_first_warps(pred.critical.timeline);
  for (const char* key : {"load_q", "wait mbar_kv.empty", "wait mbar_kv.full", "mma_qk", "wait bar.consumers"}) {
    INFO(key);
    CHECK(measured.count(key) == 1);
    CHECK(predicted.count(key) == 1);
  }
}

// ---- The kernel's SMEM addressing against ldmatrix and mma.sync emulated on the CPU ----------
namespace {

using blackflash::RowCol;

/// A 64 x 64 bf16 tile in SMEM, 128B-swizzled as TMA writes it: the byte offset o = 128 row +
/// 2 col has its 16-byte-chunk bits (4-6) XORed with its row-in-group bits (7-9) (CUTLASS
/// Swizzle<3, 4, 3>), written here independently of blackflash::swizzled.
struct Tile {
  std::vector<float> bytes_as_elems = std::vector<float>(64 * 64);  // indexed by byte offset / 2
  static uint32_t tma_offset(int row, int col) {
    const uint32_t o = 128u * row + 2u * col;
    return o ^ (((o >> 7) & 7u) << 4);
  }
  void put(int row, int col, float v) { bytes_as_elems[tma_offset(row, col) / 2] = v; }
  float get(int row, int col) const { return bytes_as_elems[tma_offset(row, col) / 2]; }
  float at(uint32_t byte) const { return bytes_as_elems.at(byte / 2); }
  void store(uint32_t byte, float v) { bytes_as_elems.at(byte / 2) = v; }
};

/// One lane's 32-bit register holding two bf16 (lo, hi).
struct Pair {
  float lo = 0, hi = 0;
};
using Regs4 = std::array<std::array<Pair, 4>, 32>;  // [lane][register]

/// ldmatrix.x4 (PTX ISA): lanes 8i..8i+7 give the byte addresses of the 8 rows of matrix i (8 b16
/// each); lane t receives, in register i, row t / 4, elements 2 (t % 4) and 2 (t % 4) + 1 of
/// matrix i, or with .trans element (2 (t % 4), t / 4) and (2 (t % 4) + 1, t / 4).
Regs4 ldmatrix_x4(const Tile& s, const std::array<uint32_t, 32>& addr, bool trans) {
  Regs4 r{};
  for (int t = 0; t < 32; ++t)
    for (int i = 0; i < 4; ++i) {
      auto m = [&](int row, int k) { return s.at(addr[8 * i + row] + 2 * k); };
      r[t][i] = trans ? Pair{m(2 * (t % 4), t / 4), m(2 * (t % 4) + 1, t / 4)}
                      : Pair{m(t / 4, 2 * (t % 4)), m(t / 4, 2 * (t % 4) + 1)};
    }
  return r;
}

/// mma.sync.m16n8k16.row.col (PTX ISA fragments): lane t, g = t / 4, q = t % 4 holds A rows g and
/// g + 8, columns 2q, 2q + 1 (a0: row g, a1: row g + 8) and 2q + 8, 2q + 9 (a2, a3); B column g,
/// rows 2q, 2q + 1 (b0) and 2q + 8, 2q + 9 (b1); C rows g (c0, c1) and g + 8 (c2, c3), columns 2q,
/// 2q + 1. d[lane] += A B.
void mma(std::array<std::array<double, 4>, 32>& d, const Regs4& a, const Regs4& b, int b0, int b1) {
  double A[16][16], B[16][8];
  for (int t = 0; t < 32; ++t) {
    const int g = t / 4, q = t % 4;
    const Pair* x = a[t].data();
    A[g][2 * q] = x[0].lo, A[g][2 * q + 1] = x[0].hi, A[g + 8][2 * q] = x[1].lo, A[g + 8][2 * q + 1] = x[1].hi;
    A[g][2 * q + 8] = x[2].lo, A[g][2 * q + 9] = x[2].hi, A[g + 8][2 * q + 8] = x[3].lo, A[g + 8][2 * q + 9] = x[3].hi;
    B[2 * q][g] = b[t][b0].lo, B[2 * q + 1][g] = b[t][b0].hi, B[2 * q + 8][g] = b[t][b1].lo,
          B[2 * q + 9][g] = b[t][b1].hi;
  }
  for (int t = 0; t < 32; ++t)
    for (int e = 0; e < 4; ++e) {
      const int row = t / 4 + 8 * (e / 2), col = 2 * (t % 4) + e % 2;
      for (int k = 0; k < 16; ++k) d[t][e] += A[row][k] * B[k][col];
    }
}

}  // namespace

TEST_CASE("blackflash fragment addressing computes S = Q K^T and O = P V on emulated ldmatrix and mma.sync",
          "[blackflash]") {
  using namespace blackflash;
  // Small integers: every product and sum is exact in double, so any misplaced element shows.
  auto qv = [](int r, int d) { return static_cast<float>((r * 7 + d * 3) % 11 - 5); };
  auto kv = [](int n, int d) { return static_cast<float>((n * 5 + d * 2) % 9 - 4); };
  auto vv = [](int n, int d) { return static_cast<float>((n * 3 + d * 5) % 7 - 3); };
  Tile q, k, v, p, o;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      q.put(r, c, qv(r, c));
      k.put(r, c, kv(r, c));
      v.put(r, c, vv(r, c));
      CHECK(swizzled(r, c) == Tile::tma_offset(r, c));  // the kernel's swizzle is TMA's
    }
  auto P = [&](int r, int key) {  // any function of S will do; this one keeps it small and exact
    double s = 0;
    for (int d = 0; d < 64; ++d) s += qv(r, d) * kv(key, d);
    return static_cast<float>(static_cast<long long>(s) % 5);
  };
  std::array<std::array<std::array<double, 4>, 32>, 4> out[kConsumerWarps];  // O per warp [n-tile][lane][e]
  for (int c = 0; c < kConsumerWarps; ++c) {
    const int pair = c / 2, half = c % 2, r0 = kRowsPerPair * pair;
    // S_half = Q K_half^T as consumer.cuh issues it.
    std::array<std::array<std::array<double, 4>, 32>, 4> sc{};
    for (int kk = 0; kk < 4; ++kk) {
      std::array<uint32_t, 32> aa, ba[2];
      for (int l = 0; l < 32; ++l) {
        const RowCol a = ldsm_a(l, r0, 16 * kk);
        aa[l] = swizzled(a.row, a.col);
        for (int np = 0; np < 2; ++np) {
          const RowCol b = ldsm_b_nk(l, kColsPerHalf * half + 16 * np, 16 * kk);
          ba[np][l] = swizzled(b.row, b.col);
        }
      }
      const Regs4 qa = ldmatrix_x4(q, aa, false);
      for (int np = 0; np < 2; ++np) {
        const Regs4 kb = ldmatrix_x4(k, ba[np], false);
        mma(sc[2 * np], qa, kb, 0, 1);
        mma(sc[2 * np + 1], qa, kb, 2, 3);
      }
    }
    for (int nt = 0; nt < 4; ++nt)
      for (int l = 0; l < 32; ++l)
        for (int e = 0; e < 4; ++e) {
          const RowCol x = acc_elem(l, e);
          const int row = r0 + x.row, key = kColsPerHalf * half + 8 * nt + x.col;
          double ref = 0;
          for (int d = 0; d < 64; ++d) ref += qv(row, d) * kv(key, d);
          INFO("warp " << c << " lane " << l << " n-tile " << nt << " element " << e);
          REQUIRE(sc[nt][l][e] == ref);
          // P over K, at the address consumer.cuh stores element e's pair to.
          const RowCol pair0 = acc_elem(l, e & 2);
          p.store(swizzled(r0 + pair0.row, kColsPerHalf * half + 8 * nt + pair0.col) + 2 * (e & 1), P(row, key));
        }
  }
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) REQUIRE(p.get(r, c) == P(r, c));  // P landed where ldmatrix reads it
  for (int c = 0; c < kConsumerWarps; ++c) {
    const int pair = c / 2, half = c % 2, r0 = kRowsPerPair * pair;
    auto& acc = out[c];
    acc = {};
    for (int kk = 0; kk < 4; ++kk) {
      std::array<uint32_t, 32> aa, ba[2];
      for (int l = 0; l < 32; ++l) {
        const RowCol a = ldsm_a(l, r0, 16 * kk);
        aa[l] = swizzled(a.row, a.col);
        for (int np = 0; np < 2; ++np) {
          const RowCol b = ldsm_b_kn_trans(l, 16 * kk, kColsPerHalf * half + 16 * np);
          ba[np][l] = swizzled(b.row, b.col);
        }
      }
      const Regs4 pa = ldmatrix_x4(p, aa, false);
      for (int np = 0; np < 2; ++np) {
        const Regs4 vb = ldmatrix_x4(v, ba[np], true);
        mma(acc[2 * np], pa, vb, 0, 1);
        mma(acc[2 * np + 1], pa, vb, 2, 3);
      }
    }
    // O staged in Q's tile as epilogue.cuh stores it.
    for (int nt = 0; nt < 4; ++nt)
      for (int l = 0; l < 32; ++l)
        for (int e = 0; e < 4; ++e) {
          const RowCol x = acc_elem(l, e), pair0 = acc_elem(l, e & 2);
          const int row = r0 + x.row, col = kColsPerHalf * half + 8 * nt + x.col;
          double ref = 0;
          for (int key = 0; key < 64; ++key) ref += P(row, key) * vv(key, col);
          INFO("warp " << c << " lane " << l << " n-tile " << nt << " element " << e);
          REQUIRE(acc[nt][l][e] == ref);
          o.store(swizzled(r0 + pair0.row, kColsPerHalf * half + 8 * nt + pair0.col) + 2 * (e & 1),
                  static_cast<float>(ref));
        }
  }
  // The copy-out: each piece's 8 bytes are 4 consecutive columns of one row of O.
  std::vector<int> seen(64 * 64, 0);
  for (int i = 0; i < kConsumerThreads * 4; ++i) {
    const RowCol x = out_piece(i);
    for (int j = 0; j < 4; ++j) {
      double ref = 0;
      for (int key = 0; key < 64; ++key) ref += P(x.row, key) * vv(key, x.col + j);
      REQUIRE(o.at(swizzled(x.row, x.col) + 2 * j) == static_cast<float>(ref));
      ++seen[x.row * 64 + x.col + j];
    }
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == 64 * 64);  // every element copied once
}
