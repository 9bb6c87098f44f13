// Deterministic discrete-event queue: events are ordered by time, then priority,
// then insertion order, so equal inputs give byte-identical runs (as gem5/SST do).
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

namespace attnsim {

/// One scheduled event. `type`, `a`, `b` are interpreted by the engine.
struct Event {
  double time = 0;       ///< cycles
  int32_t priority = 0;  ///< lower runs first among equal times
  uint64_t seq = 0;      ///< insertion order, the final tie-breaker
  uint32_t type = 0;
  int32_t a = 0;
  int64_t b = 0;
};

/// Min-queue of events ordered by (time, priority, seq).
class EventQueue {
 public:
  void push(double time, int32_t priority, uint32_t type, int32_t a, int64_t b = 0) {
    heap_.push(Event{time, priority, next_seq_++, type, a, b});
  }
  bool empty() const { return heap_.empty(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  uint64_t pushed() const { return next_seq_; }

 private:
  /// Heap order: the earliest (time, priority, seq) on top.
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      if (x.time != y.time) return x.time > y.time;
      if (x.priority != y.priority) return x.priority > y.priority;
      return x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace attnsim
