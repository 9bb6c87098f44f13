// EventQueue: events in (time, priority, insertion) order; keyed timers take their place in that
// order when set, as a push would, and replacing or cancelling one leaves nothing behind. The
// engine relies on that equivalence: a compute block's finish, rescheduled at every rate change,
// fires exactly when the old push-and-discard-stale scheme fired it.
#include <catch2/catch.hpp>
#include <cstdint>
#include <queue>
#include <random>
#include <vector>

#include "core/event_queue.hpp"

using namespace attnsim;

TEST_CASE("events pop by time then priority then insertion order", "[event_queue]") {
  EventQueue q;
  q.push(5, 1, 0, 1);
  q.push(3, 1, 0, 2);
  q.push(5, 0, 0, 3);
  q.push(5, 1, 0, 4);
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.pop().a);
  CHECK(order == std::vector<int>{2, 3, 1, 4});
}

TEST_CASE("a timer is ordered as a push made when it was set - replaced and cancelled timers leave nothing",
          "[event_queue]") {
  EventQueue q(2);
  q.push(5, 0, 0, 1);
  q.set_timer(0, 5, 0, 9, 2);
  q.push(5, 0, 0, 3);
  q.set_timer(1, 4, 0, 9, 4);
  q.set_timer(1, 6, 0, 9, 5);  // replaces the timer at 4
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.pop().a);
  CHECK(order == std::vector<int>{1, 2, 3, 5});

  q.set_timer(0, 1, 0, 9, 6);
  q.push(2, 0, 0, 7);
  q.set_timer(0, 5, 0, 9, 8);  // re-set after the push: now behind it in time
  q.set_timer(1, 3, 0, 9, 9);
  q.cancel_timer(1);
  q.cancel_timer(1);  // cancelling an idle timer is a no-op
  order.clear();
  while (!q.empty()) order.push_back(q.pop().a);
  CHECK(order == std::vector<int>{7, 8});
}

TEST_CASE("timers pop exactly as pushed events with stale ones discarded would (random operations)", "[event_queue]") {
  // Reference: every set is a push stamped with its key's version; a pop discards stale ones.
  struct Ref {
    struct Later {
      bool operator()(const Event& x, const Event& y) const {
        if (x.time != y.time) return x.time > y.time;
        if (x.priority != y.priority) return x.priority > y.priority;
        return x.seq > y.seq;
      }
    };
    std::priority_queue<Event, std::vector<Event>, Later> heap;
    std::vector<int64_t> version;
    uint64_t seq = 0;
    explicit Ref(size_t keys) : version(keys, 0) {}
    void push(double t, int32_t p, int32_t a) { heap.push(Event{t, p, seq++, 0, a, -1}); }
    void set(size_t k, double t, int32_t p, int32_t a) { heap.push(Event{t, p, seq++, 1, a, ++version[k]}); }
    void cancel(size_t k) { ++version[k]; }
    bool live(const Event& e) const { return e.type == 0 || e.b == version[static_cast<size_t>(e.a) % version.size()]; }
    void drop_stale() {
      while (!heap.empty() && !live(heap.top())) heap.pop();
    }
  };
  constexpr size_t kKeys = 6;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    EventQueue q(kKeys);
    Ref ref(kKeys);
    double now = 0;
    int next_id = 0;
    for (int step = 0; step < 2000; ++step) {
      const int what = static_cast<int>(rng() % 10);
      // Few distinct times, so that ties on time and priority are common.
      const double t = now + static_cast<double>(rng() % 4);
      const int32_t prio = static_cast<int32_t>(rng() % 2);
      const size_t key = rng() % kKeys;
      if (what < 3) {
        const int32_t id = static_cast<int32_t>(kKeys * (1 + next_id++));
        q.push(t, prio, 0, id);
        ref.push(t, prio, id);
      } else if (what < 6) {
        // The timer's event carries its key in `a` (id % kKeys), as the engine's warp index.
        const int32_t id = static_cast<int32_t>(kKeys * (1 + next_id++) + key);
        q.set_timer(key, t, prio, 1, id);
        ref.set(key, t, prio, id);
      } else if (what < 7) {
        q.cancel_timer(key);
        ref.cancel(key);
      } else {
        ref.drop_stale();
        REQUIRE(q.empty() == ref.heap.empty());
        if (q.empty()) continue;
        const Event got = q.pop();
        const Event want = ref.heap.top();
        ref.heap.pop();
        if (want.type == 1) ref.cancel(static_cast<size_t>(want.a) % kKeys);  // fired: the key is idle
        REQUIRE(got.a == want.a);
        REQUIRE(got.time == want.time);
        REQUIRE(got.seq == want.seq);
        now = got.time;
      }
    }
  }
}
