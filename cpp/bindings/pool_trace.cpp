// The pool trace's bindings (pool_trace.h), linked only into the bench-only modules:
//   poolTraceTake() -> [{ begin, end, caller, maxThreads, tasks }], the sections since the last
//   take, where maxThreads is parallel_for's (Infinity for no limit) and tasks a Float64Array
//   of (start, end, thread) per task, in task order; times in µs.
//   poolTraceNow() -> the trace's clock now, in µs.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdint>
#include <limits>

#include "runtime/pool_trace.h"

namespace {

emscripten::val pool_trace_take() {
  using emscripten::val;
  val out = val::array();
  for (const wa::pool_trace::Section& s : wa::pool_trace::take()) {
    std::vector<double> flat;
    flat.reserve(3 * s.tasks.size());
    for (const wa::pool_trace::Task& t : s.tasks)
      flat.insert(flat.end(), {t.start_us, t.end_us, double(t.thread)});
    val section = val::object();
    section.set("begin", s.begin_us);
    section.set("end", s.end_us);
    section.set("caller", s.caller);
    section.set("maxThreads", s.max_threads == SIZE_MAX ? std::numeric_limits<double>::infinity()
                                                        : double(s.max_threads));
    // a copy: the view into wasm memory dies with flat
    section.set(
        "tasks",
        val::global("Float64Array").new_(emscripten::typed_memory_view(flat.size(), flat.data())));
    out.call<void>("push", section);
  }
  return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(pool_trace) {
  emscripten::function("poolTraceTake", &pool_trace_take);
  emscripten::function("poolTraceNow", &wa::pool_trace::now_us);
}
