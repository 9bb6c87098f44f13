#include "explore/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "core/engine.hpp"
#include "driver/simulate.hpp"
#include "model/json_reader.hpp"
#include "lower/schedule.hpp"

namespace attnsim {

SweepSpec load_sweep(const std::string& file) { return sweep_from_json(load_json_file(file), file); }

SweepSpec sweep_from_json(const nlohmann::json& doc, const std::string& file) {
  JsonReader r(doc, file);
  SweepSpec s;
  s.file = file;
  s.name = r.string("name");
  s.description = r.string_or("description", "");
  const auto rooted = [](const std::string& p) { return !p.empty() && p[0] != '/' ? project_root() + "/" + p : p; };
  s.schedule_file = rooted(r.string("schedule"));
  s.base = load_json_file(s.schedule_file);
  s.hw = load_hardware(resolve_hardware_path(r.string("hardware")));
  const auto& probs = r.raw("problems");
  if (!probs.is_array() || probs.empty()) r.fail_at("problems", "expected a non-empty array of problems");
  for (size_t i = 0; i < probs.size(); ++i) {
    const std::string path = "/problems/" + std::to_string(i);
    s.problems.push_back(problem_from_json(probs[i], file, path));
    const auto* label = probs[i].is_object() && probs[i].contains("label") ? &probs[i]["label"] : nullptr;
    s.problem_labels.push_back(label && label->is_string() ? label->get<std::string>() : s.problems.back().describe());
  }
  JsonReader axes = r.object("axes");
  for (const auto& ptr : axes.keys()) {
    const auto& v = axes.raw(ptr);
    if (!v.is_array() || v.empty()) axes.fail_at(ptr, "expected a non-empty array of values to try");
    // Each value must be one the schedule can take there: set it once on a copy to check the path.
    nlohmann::json probe = s.base;
    try {
      set_pointer(probe, ptr, v[0], s.schedule_file, "axis");
    } catch (const InputError& e) {
      axes.fail_at(ptr, fmt::format("an axis of the schedule {}: {}", s.schedule_file, e.message()));
    }
    s.axes.push_back({ptr, std::vector<nlohmann::json>(v.begin(), v.end())});
  }
  if (const auto* cs = r.optional_raw("constraints")) {
    if (!cs->is_array()) r.fail_at("constraints", "expected an array");
    for (size_t i = 0; i < cs->size(); ++i) {
      JsonReader c((*cs)[i], file, "/constraints/" + std::to_string(i));
      if (c.has("resource")) {
        s.limits.push_back(
            {c.choice("resource", {"smem_bytes", "tmem_columns", "registers", "warps"}), c.number("max", 0, 1e12)});
      } else {
        JsonReader when = c.object("when");
        const auto keys = when.keys();
        if (keys.size() != 1) when.fail("expected exactly one {\"/pointer\": value}");
        parse_pointer(keys[0], file, when.child_path(keys[0]));
        WhenConstraint w{keys[0], when.raw(keys[0]), "", {}};
        when.finish();
        JsonReader req = c.object("require");
        const auto rk = req.keys();
        if (rk.size() != 1) req.fail("expected exactly one {\"/pointer\": [allowed values]}");
        const auto& allowed = req.raw(rk[0]);
        parse_pointer(rk[0], file, req.child_path(rk[0]));
        if (!allowed.is_array()) req.fail_at(rk[0], "expected an array of allowed values");
        w.pointer = rk[0];
        w.allowed.assign(allowed.begin(), allowed.end());
        req.finish();
        s.when.push_back(w);
      }
      c.string_or("why", "");
      c.finish();
    }
  }
  if (auto o = r.optional_object("objective")) {
    s.objective = o->choice_or("primary", "geomean_tflops", {"geomean_tflops", "min_tflops"});
    s.secondary = o->choice_or("secondary", "", {"", "smem_bytes", "tmem_columns", "registers", "warps"});
    o->finish();
  }
  if (auto se = r.optional_object("search")) {
    s.search.strategy = se->choice("strategy", {"grid", "local_search"});
    s.search.restarts = static_cast<int>(se->integer_or("restarts", 8, 1, 10000));
    s.search.seed = static_cast<uint64_t>(se->integer_or("seed", 1, 0, 1LL << 62));
    s.search.budget = se->number_or("budget", 0.1, 1e-6, 1.0);
    se->finish();
  }
  r.finish();
  return s;
}

SweepEvaluator::SweepEvaluator(SweepSpec spec) : spec_(std::move(spec)) {
  for (const auto& a : spec_.axes)
    grid_size_ = grid_size_ > SIZE_MAX / a.values.size() ? SIZE_MAX : grid_size_ * a.values.size();
}

std::vector<int> SweepEvaluator::decode(size_t index) const {
  std::vector<int> c(spec_.axes.size());
  for (size_t i = spec_.axes.size(); i-- > 0;) {
    c[i] = static_cast<int>(index % spec_.axes[i].values.size());
    index /= spec_.axes[i].values.size();
  }
  return c;
}

size_t SweepEvaluator::encode(const std::vector<int>& choice) const {
  size_t index = 0;
  for (size_t i = 0; i < spec_.axes.size(); ++i) index = index * spec_.axes[i].values.size() + choice[i];
  return index;
}

nlohmann::json SweepEvaluator::document(size_t index) const {
  nlohmann::json doc = spec_.base;
  const auto c = decode(index);
  for (size_t i = 0; i < spec_.axes.size(); ++i)
    set_pointer(doc, spec_.axes[i].pointer, spec_.axes[i].values[c[i]], spec_.file, "axis");
  doc["name"] = fmt::format("{}_{}", spec_.name, index);
  return doc;
}

bool SweepEvaluator::admitted(size_t index) const {
  if (spec_.when.empty()) return true;
  const nlohmann::json doc = document(index);
  for (const auto& w : spec_.when) {
    const nlohmann::json *when = find_pointer(doc, w.when_pointer), *value = find_pointer(doc, w.pointer);
    if (!when || *when != w.when_value) continue;
    if (!value || std::find(w.allowed.begin(), w.allowed.end(), *value) == w.allowed.end()) return false;
  }
  return true;
}

Evaluation SweepEvaluator::evaluate(size_t index) const {
  Evaluation e;
  e.index = index;
  const std::string origin = fmt::format("{} (candidate {} of {})", spec_.schedule_file, index, spec_.file);
  try {
    const auto schedule = parse_schedule(document(index), origin);
    for (const auto& p : spec_.problems) {
      schedule->check(spec_.hw, p);
      const auto res = schedule->resources(spec_.hw, p);
      for (const auto& l : spec_.limits) {
        auto it = res.find(l.resource);
        if (it != res.end() && it->second > l.max)
          throw InputError(origin, "", fmt::format("{} {} > {} ({})", l.resource, it->second, l.max, p.describe()),
                           "constraint_" + l.resource);
      }
      if (!spec_.secondary.empty()) {
        auto it = res.find(spec_.secondary);
        if (it != res.end()) e.secondary = std::max(e.secondary, it->second);
      }
    }
    PredictOptions opt;
    opt.max_events = spec_.max_events;
    opt.max_tiles = spec_.max_tiles;
    opt.record_spans = false;
    opt.extrapolate = true;
    double log_sum = 0, min_tf = INFINITY;
    for (const auto& p : spec_.problems) {
      const Prediction pr = predict(*schedule, spec_.hw, p, opt);
      e.tflops.push_back(pr.tflops);
      e.time_us.push_back(pr.time_us);
      log_sum += std::log(pr.tflops);
      min_tf = std::min(min_tf, pr.tflops);
    }
    e.objective = spec_.objective == "min_tflops" ? min_tf : std::exp(log_sum / spec_.problems.size());
    e.feasible = true;
  } catch (const InputError& err) {
    e.reason = err.reason();
    e.detail = err.what();
  } catch (const DeadlockError& err) {
    e.reason = "deadlock";
    e.detail = err.what();
  } catch (const ProgramError& err) {
    e.reason = "barrier_misuse";
    e.detail = err.what();
  } catch (const nlohmann::json::exception&) {
    // Reading goes through JsonReader, which reports in our words; anything else is a bug, but a
    // candidate that trips it is reported, not a crash of the whole sweep.
    e.reason = "input";
    e.detail = fmt::format("{}: the candidate's schedule could not be read", origin);
  }
  if (!e.feasible) {
    e.tflops.clear();
    e.time_us.clear();
  }
  return e;
}

std::vector<size_t> grid_candidates(const SweepEvaluator& ev) {
  std::vector<size_t> out;
  for (size_t i = 0; i < ev.grid_size(); ++i)
    if (ev.admitted(i)) out.push_back(i);
  return out;
}

std::vector<Evaluation> evaluate_all(const SweepEvaluator& ev, const std::vector<size_t>& indices, int threads,
                                     const std::atomic<bool>* stop, const ProgressFn& progress) {
  std::vector<std::optional<Evaluation>> slots(indices.size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::mutex progress_mu;
  std::exception_ptr error;  // the first exception of a worker, rethrown on this thread
  auto worker = [&]() {
    for (;;) {
      if ((stop && stop->load()) || failed.load()) return;
      const size_t i = next.fetch_add(1);
      if (i >= indices.size()) return;
      try {
        slots[i] = ev.evaluate(indices[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(progress_mu);
        if (!error) error = std::current_exception();
        failed.store(true);
        return;
      }
      const size_t d = done.fetch_add(1) + 1;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        progress(d, indices.size());
      }
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(indices.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  std::vector<Evaluation> out;
  for (auto& s : slots)
    if (s) out.push_back(std::move(*s));
  std::sort(out.begin(), out.end(), [](const Evaluation& a, const Evaluation& b) { return a.index < b.index; });
  return out;
}

std::vector<Evaluation> local_search(const SweepEvaluator& ev, int threads, const std::atomic<bool>* stop,
                                     const ProgressFn& progress) {
  const SearchSpec& ss = ev.spec().search;
  const std::vector<size_t> admitted = grid_candidates(ev);
  const size_t budget = std::max<size_t>(1, static_cast<size_t>(ss.budget * static_cast<double>(admitted.size())));
  std::map<size_t, Evaluation> memo;
  std::mt19937_64 rng(ss.seed);
  auto evaluate = [&](std::vector<size_t> want) {
    std::vector<size_t> fresh;
    for (size_t i : want)
      if (!memo.count(i) && memo.size() + fresh.size() < budget) fresh.push_back(i);
    for (auto& e : evaluate_all(ev, fresh, threads, stop, nullptr)) memo.emplace(e.index, std::move(e));
    if (progress) progress(memo.size(), budget);
  };
  auto score = [&](size_t i) { return memo.at(i).feasible ? memo.at(i).objective : -INFINITY; };
  for (int r = 0; r < ss.restarts && memo.size() < budget && !(stop && stop->load()); ++r) {
    // A random admitted, unseen start; a few draws at once so an infeasible one does not waste the restart.
    std::vector<size_t> starts;
    for (int tries = 0; tries < 64 && starts.size() < 4; ++tries) {
      const size_t s = admitted[std::uniform_int_distribution<size_t>(0, admitted.size() - 1)(rng)];
      if (!memo.count(s) && std::find(starts.begin(), starts.end(), s) == starts.end()) starts.push_back(s);
    }
    evaluate(starts);
    size_t cur = SIZE_MAX;
    for (size_t s : starts)
      if (memo.count(s) && (cur == SIZE_MAX || score(s) > score(cur))) cur = s;
    if (cur == SIZE_MAX || !std::isfinite(score(cur))) continue;
    for (;;) {  // steepest ascent over one-axis moves
      std::vector<size_t> nbrs;
      const auto c = ev.decode(cur);
      for (size_t a = 0; a < c.size(); ++a)
        for (int v = 0; v < static_cast<int>(ev.spec().axes[a].values.size()); ++v) {
          if (v == c[a]) continue;
          auto n = c;
          n[a] = v;
          const size_t idx = ev.encode(n);
          if (ev.admitted(idx)) nbrs.push_back(idx);
        }
      evaluate(nbrs);
      size_t best = cur;
      for (size_t n : nbrs)
        if (memo.count(n) && (score(n) > score(best) || (score(n) == score(best) && n < best))) best = n;
      if (best == cur || memo.size() >= budget || (stop && stop->load())) break;
      cur = best;
    }
  }
  std::vector<Evaluation> out;
  for (auto& [i, e] : memo) out.push_back(std::move(e));
  return out;
}

std::vector<const Evaluation*> rank(const std::vector<Evaluation>& evals) {
  std::vector<const Evaluation*> out;
  for (const auto& e : evals)
    if (e.feasible) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const Evaluation* a, const Evaluation* b) {
    return a->objective != b->objective ? a->objective > b->objective : a->index < b->index;
  });
  return out;
}

std::vector<const Evaluation*> pareto_front(const std::vector<Evaluation>& evals) {
  std::vector<const Evaluation*> out;
  // By objective, best first: a point joins when its secondary is lower than every better point's;
  // among equal objectives only the lowest secondary survives.
  for (const auto* e : rank(evals)) {
    if (out.empty())
      out.push_back(e);
    else if (e->objective == out.back()->objective) {
      if (e->secondary < out.back()->secondary) out.back() = e;
    } else if (e->secondary < out.back()->secondary)
      out.push_back(e);
  }
  return out;
}

std::map<std::string, size_t> rejections(const std::vector<Evaluation>& evals) {
  std::map<std::string, size_t> out;
  for (const auto& e : evals)
    if (!e.feasible) ++out[e.reason];
  return out;
}

}  // namespace attnsim
