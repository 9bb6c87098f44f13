// The "explicit" family: each warp's program is written out in the JSON. Used for
// hand-computable micro-schedules (tests/schedules/) and for trying a pipeline
// shape before writing a family for it.
//
//   "pipelines": {"buf": {"stages": 2, "full_count": 1, "empty_count": 1}},
//   "named_barriers": {"sync": {"threads": 64}},
//   "warps": [{"warp": 0, "role": "producer", "program": [
//       {"op": "repeat", "times": 4, "body": [
//           {"op": "producer_acquire", "pipeline": "buf"},
//           {"op": "compute", "fma_lanes": 3200},
//           {"op": "producer_commit", "pipeline": "buf"}]}]}]
//
// Ops: producer_acquire, producer_commit, consumer_wait, consumer_release (optional
// "count", default 1), compute (issue, fma_lanes, alu_lanes, mufu_lanes, tmem_bytes,
// smem_bytes, latency (a tail after the block), chain (the block's dependency-chain latency: it
// lasts at least that long), measured ({"alone_cycles", "beside_ss", "beside_rs"}: a timing
// measured on the GPU, the slowdowns beside SS / RS wgmma as time beside / time alone; optional
// "while_copies_land": [alone, beside SS, beside RS], the further slowdown while TMA loads land in
// shared memory); optional
// "name" from the op vocabulary), tma_load (pipeline, bytes, from_hbm: arrive.expect_tx on the
// producer's stage, then the copy), tma_store (bytes; wait: false, the warp does not wait), mma (flops, smem_bytes,
// instructions: the group's MMA instruction count, a_in_registers: wgmma RS), mma_commit (pipeline, side "full" |
// "empty"), wait_mma (pending:
// wgmma.wait_group), cp_async (bytes), wait_cp_async (pending), bar_sync and bar_arrive
// (barrier; 32 threads per warp), repeat (times, body). compute also takes mma_sync_flops.
#include <fmt/format.h>

#include <map>

#include "lower/builder.hpp"
#include "lower/families.hpp"

namespace attnsim {
namespace {

/// Ops a CTA's programs may expand to (repeats multiply): more is refused at load time rather
/// than building programs that take minutes and gigabytes.
constexpr long long kMaxExpandedOps = 10'000'000;

struct PipeDecl {
  int stages = 1, full_count = 1, empty_count = 1;
};

class ExplicitSchedule : public Schedule {
 public:
  explicit ExplicitSchedule(JsonReader& r) : doc_(r.json()) {
    read_header(r);
    if (auto p = r.optional_object("pipelines")) {
      for (const auto& key : p->keys()) {
        JsonReader pr = p->object(key);
        PipeDecl d;
        d.stages = static_cast<int>(pr.integer("stages", 1, 64));
        d.full_count = static_cast<int>(pr.integer("full_count", 1, 4096));
        d.empty_count = static_cast<int>(pr.integer("empty_count", 1, 4096));
        pr.finish();
        pipes_[key] = d;
      }
    }
    if (auto n = r.optional_object("named_barriers")) {
      for (const auto& key : n->keys()) {
        JsonReader nr = n->object(key);
        named_[key] = static_cast<int>(nr.integer("threads", 32, 1024));
        if (named_[key] % 32) nr.fail_at("threads", "expected a multiple of 32 (whole warps)");
        nr.finish();
      }
    }
    const auto& warps = r.raw("warps");
    if (!warps.is_array() || warps.empty()) r.fail_at("warps", "expected a non-empty array of warps");
    // Parse once now so that errors surface at load time, not at lowering time.
    CtaProgram probe = build();
    (void)probe;
  }

  void check(const Hardware&, const Problem&) const override {}
  GridPlan plan_grid(const Hardware&, const Problem&, long long) const override {
    GridPlan g;
    g.mode = GridPlan::Mode::Single;
    g.cta_tiles = {{TileWork{}}};
    return g;
  }
  CtaProgram lower(const Hardware&, const Problem&, const std::vector<TileWork>&) const override { return build(); }
  std::vector<std::string> knob_lines(const Hardware&, const Problem&) const override {
    return {fmt::format("explicit programs: {} warps", doc_["warps"].size())};
  }
  double flops(const Problem&) const override { return 0; }
  std::vector<std::string> roles() const override {
    std::vector<std::string> out;
    for (const auto& w : doc_["warps"])
      if (w.contains("role") && std::find(out.begin(), out.end(), w["role"]) == out.end()) out.push_back(w["role"]);
    return out;
  }

 private:
  CtaProgram build() const {
    CtaBuilder cta;
    std::map<std::string, PipelineIds> ids;
    for (const auto& [name, d] : pipes_) ids[name] = cta.pipeline(name, d.stages, d.full_count, d.empty_count);
    std::map<std::string, int> named;
    for (const auto& [name, threads] : named_) named[name] = cta.barrier("bar." + name, threads, true);
    const auto& warps = doc_["warps"];
    std::map<long long, bool> seen;
    long long expanded = 0;
    for (size_t i = 0; i < warps.size(); ++i) {
      JsonReader wr(warps[i], file_, "/warps/" + std::to_string(i));
      const long long index = wr.integer("warp", 0, 63);
      if (seen[index]) wr.fail_at("warp", fmt::format("warp {} is listed twice", index));
      seen[index] = true;
      WarpBuilder wb = cta.warp(static_cast<int>(index), wr.string("role"));
      std::map<std::string, PipelineState> prod, cons;  // per pipeline, from first use
      const auto& prog = wr.raw("program");
      if (!prog.is_array()) wr.fail_at("program", "expected an array of ops");
      emit(prog, wr.child_path("program"), wb, ids, named, prod, cons, expanded);
      wr.finish();
    }
    return cta.take();
  }

  void emit(const nlohmann::json& ops, const std::string& path, WarpBuilder& wb,
            const std::map<std::string, PipelineIds>& ids, const std::map<std::string, int>& named,
            std::map<std::string, PipelineState>& prod, std::map<std::string, PipelineState>& cons,
            long long& expanded) const {
    // This warp's producer / consumer state in pipeline p, starting where CUTLASS starts them.
    auto producer = [&](const PipelineIds& p) -> PipelineState& {
      return prod.try_emplace(p.name, p.producer_start()).first->second;
    };
    auto consumer = [&](const PipelineIds& p) -> PipelineState& {
      return cons.try_emplace(p.name, p.consumer_start()).first->second;
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      JsonReader o(ops[i], file_, path + "/" + std::to_string(i));
      // Each op and each pass of a repeat counts, so that empty nested repeats cannot spin either.
      const auto count_one = [&]() {
        if (++expanded > kMaxExpandedOps)
          o.fail(fmt::format("the programs expand to more than {} ops here: expected fewer (nested repeats "
                             "multiply their times)",
                             kMaxExpandedOps));
      };
      count_one();
      const std::string kind =
          o.choice("op", {"repeat", "producer_acquire", "producer_commit", "consumer_wait", "consumer_release",
                          "compute", "tma_load", "tma_store", "mma", "mma_commit", "bar_sync", "bar_arrive", "wait_mma",
                          "cp_async", "wait_cp_async"});
      auto pipe = [&]() -> const PipelineIds& {
        const std::string n = o.string("pipeline");
        auto it = ids.find(n);
        if (it == ids.end()) o.fail_at("pipeline", fmt::format("no pipeline named \"{}\" in /pipelines", n));
        return it->second;
      };
      auto bar = [&]() {
        const std::string n = o.string("barrier");
        auto it = named.find(n);
        if (it == named.end()) o.fail_at("barrier", fmt::format("no barrier named \"{}\" in /named_barriers", n));
        return it->second;
      };
      const int count = static_cast<int>(o.integer_or("count", 1, 1, 4096));
      if (kind == "repeat") {
        const long long times = o.integer("times", 0, 1000000);
        const auto& body = o.raw("body");
        if (!body.is_array()) o.fail_at("body", "expected an array of ops");
        for (long long t = 0; t < times; ++t) {
          count_one();
          emit(body, o.child_path("body"), wb, ids, named, prod, cons, expanded);
        }
      } else if (kind == "producer_acquire") {
        const auto& p = pipe();
        wb.producer_acquire(p, producer(p));
      } else if (kind == "producer_commit") {
        const auto& p = pipe();
        wb.producer_commit(p, producer(p), count);
      } else if (kind == "consumer_wait") {
        const auto& p = pipe();
        wb.consumer_wait(p, consumer(p));
      } else if (kind == "consumer_release") {
        const auto& p = pipe();
        wb.consumer_release(p, consumer(p), count);
      } else if (kind == "compute") {
        Work w;
        w.issue = o.number_or("issue", 0, 0, 1e12);
        w.fma_lanes = o.number_or("fma_lanes", 0, 0, 1e12);
        w.alu_lanes = o.number_or("alu_lanes", 0, 0, 1e12);
        w.mufu_lanes = o.number_or("mufu_lanes", 0, 0, 1e12);
        w.tmem_bytes = o.number_or("tmem_bytes", 0, 0, 1e12);
        w.smem_bytes = o.number_or("smem_bytes", 0, 0, 1e12);
        w.mma_sync_flops = o.number_or("mma_sync_flops", 0, 0, 1e15);
        MeasuredTiming m;
        if (auto mr = o.optional_object("measured")) {
          m.alone = mr->number("alone_cycles", 1e-9, 1e12);
          m.beside_ss = mr->number("beside_ss", 1, 100);
          m.beside_rs = mr->number("beside_rs", 1, 100);
          if (const nlohmann::json* landing = mr->optional_raw("while_copies_land")) {
            const nlohmann::json& cl = *landing;
            if (!cl.is_array() || cl.size() != 3 || !cl[0].is_number() || !cl[1].is_number() || !cl[2].is_number() ||
                cl[0].get<double>() < 1 || cl[1].get<double>() < 1 || cl[2].get<double>() < 1)
              mr->fail_at("while_copies_land", "expected [alone, beside SS, beside RS]: three slowdowns >= 1");
            m.beside_copies = {cl[0].get<double>(), cl[1].get<double>(), cl[2].get<double>()};
          }
          mr->finish();
        }
        wb.compute(op_id(o), w, o.number_or("latency", 0, 0, 1e9), o.number_or("chain", 0, 0, 1e9), m);
      } else if (kind == "tma_load") {
        const auto& p = pipe();
        PipelineState& s = producer(p);
        wb.tma_load(op_id(o, ATTNSIM_OP_TMA_LOAD), p.full[s.index], o.number("bytes", 1, 1e12),
                    o.boolean_or("from_hbm", false));
        s.advance();
      } else if (kind == "tma_store") {
        wb.tma_store(op_id(o, ATTNSIM_OP_STORE_O), o.number("bytes", 1, 1e12), o.boolean_or("wait", true));
      } else if (kind == "mma") {
        wb.mma(op_id(o, ATTNSIM_OP_MMA), o.number("flops", 1, 1e15), o.number_or("smem_bytes", 0, 0, 1e12),
               static_cast<int>(o.integer_or("instructions", 1, 1, 4096)), o.boolean_or("a_in_registers", false));
      } else if (kind == "mma_commit") {
        const auto& p = pipe();
        if (o.choice("side", {"full", "empty"}) == "full") {
          PipelineState& s = producer(p);
          wb.commit(p.full[s.index], count);
          s.advance();
        } else {
          PipelineState& s = consumer(p);
          wb.commit(p.empty[s.index], count);
          s.advance();
        }
      } else if (kind == "wait_mma") {
        wb.wait_mma(static_cast<int>(o.integer("pending", 0, 64)));
      } else if (kind == "cp_async") {
        wb.cp_async(op_id(o, ATTNSIM_OP_TMA_LOAD), o.number("bytes", 1, 1e12));
      } else if (kind == "wait_cp_async") {
        wb.wait_cp_async(static_cast<int>(o.integer("pending", 0, 64)));
      } else if (kind == "bar_sync") {
        wb.bar_sync(bar(), 32);
      } else if (kind == "bar_arrive") {
        wb.bar_arrive(bar(), 32);
      }
      o.finish();
    }
  }

  int op_id(JsonReader& o, int dflt = ATTNSIM_OP_COMPUTE) const {
    if (!o.optional_raw("name")) return dflt;
    const std::string n = o.string("name");
    for (int i = 0; i < ATTNSIM_OP_COUNT; ++i)
      if (n == attnsim_op_name(i)) return i;
    o.fail_at("name", fmt::format("expected an op name from kernels/common/op_names.h, got \"{}\"", n));
  }

  nlohmann::json doc_;
  std::map<std::string, PipeDecl> pipes_;
  std::map<std::string, int> named_;
};

}  // namespace

std::unique_ptr<Schedule> parse_explicit_schedule(JsonReader& r) {
  auto s = std::make_unique<ExplicitSchedule>(r);
  return s;
}

}  // namespace attnsim
