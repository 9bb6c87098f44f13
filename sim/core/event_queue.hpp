// Deterministic discrete-event queue: events are ordered by time, then priority,
// then insertion order, so equal inputs give byte-identical runs (as gem5/SST do).
#pragma once
#include <cstddef>
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

/// Min-queue of events ordered by (time, priority, seq), plus keyed timers: at most one pending
/// event per key, replaced or cancelled in place. A timer takes its seq when set, as a push
/// would, so the order of everything is what pushing and discarding stale events would give;
/// but a timer rescheduled at every rate change (a compute block under pipe sharing) leaves no
/// stale events in the heap.
class EventQueue {
 public:
  /// `timers`: the number of timer keys (0 .. timers-1).
  explicit EventQueue(size_t timers = 0) : timers_(timers) {}

  void push(double time, int32_t priority, uint32_t type, int32_t a, int64_t b = 0) {
    heap_.push(Event{time, priority, next_seq_++, type, a, b});
  }
  /// Sets (or replaces) timer `key`'s event.
  void set_timer(size_t key, double time, int32_t priority, uint32_t type, int32_t a, int64_t b = 0) {
    if (!timers_[key].armed) ++armed_;
    timers_[key] = {Event{time, priority, next_seq_++, type, a, b}, true};
    // The earliest timer stays known, unless it is the one moved (perhaps later).
    if (best_valid_) {
      if (best_ == key)
        best_valid_ = false;
      else if (best_ == timers_.size() || Later{}(timers_[best_].event, timers_[key].event))
        best_ = key;
    }
  }
  /// Cancels timer `key`'s pending event, if any.
  void cancel_timer(size_t key) {
    if (timers_[key].armed) --armed_;
    timers_[key].armed = false;
    if (best_ == key) best_valid_ = false;
  }
  bool empty() const { return heap_.empty() && armed_ == 0; }
  /// Removes and returns the earliest event (of the heap and the armed timers). Not empty().
  Event pop() {
    if (armed_ > 0 && !best_valid_) {  // scan the timers only when the earliest is not known
      best_ = timers_.size();
      for (size_t k = 0; k < timers_.size(); ++k)
        if (timers_[k].armed && (best_ == timers_.size() || Later{}(timers_[best_].event, timers_[k].event))) best_ = k;
      best_valid_ = true;
    }
    const size_t best = armed_ > 0 ? best_ : timers_.size();
    if (best < timers_.size() && (heap_.empty() || Later{}(heap_.top(), timers_[best].event))) {
      timers_[best].armed = false;
      --armed_;
      best_valid_ = false;
      return timers_[best].event;
    }
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
  struct Timer {
    Event event;
    bool armed = false;
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::vector<Timer> timers_;
  size_t armed_ = 0;
  /// The earliest armed timer (timers_.size(): none) while best_valid_; else found by a scan in
  /// pop(). A timer rescheduled at every rate change made that scan, at every pop, a fifth of a
  /// long prediction's time (perf, hd64 s16k b2 without pingpong).
  size_t best_ = 0;
  bool best_valid_ = false;
  uint64_t next_seq_ = 0;
};

}  // namespace attnsim
