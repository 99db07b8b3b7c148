// The notes under the report's title: what the results say about each configuration that
// a reader of the numbers must know (threads in Node, gradients in tfjs, skips).

export function peerNotes({ rows, startup, long, machine }) {
  const all = [...rows, ...(long?.rows ?? [])];
  const notes = [];
  const ofImpl = (key) => all.filter((r) => r.impl === key);
  const okSomewhere = (key) =>
    ofImpl(key).some((r) => r.status === 'ok') ||
    (startup ?? []).some((s) => `${s.impl}-${s.threads}` === key && !s.error);
  const firstFailure = (key) =>
    ofImpl(key).find((r) => r.status === 'failed')?.reason ??
    (startup ?? []).find((s) => `${s.impl}-${s.threads}` === key && s.error)?.error;
  const tried = (key) => ofImpl(key).length > 0 || (startup ?? []).some((s) => `${s.impl}-${s.threads}` === key);

  if (machine?.browser) return browserNotes(tried, okSomewhere, firstFailure);
  if (tried('tfjs-2')) {
    const base =
      "tfjs-wasm's threaded binary does not run in Node as published: tfjs turns it off under Node " +
      '(WASM_HAS_MULTITHREAD_SUPPORT is false when IS_NODE, tfjs issue #3830), and forced on, its pthread workers ' +
      'fail to start from blob: URLs (ERR_WORKER_PATH); besides, it caps its pool at logical cores / 2 (1 here).';
    notes.push(
      okSomewhere('tfjs-2')
        ? `${base} Its 2-thread rows run it with the workarounds of scripts/bench/tfjs_node_threads.mjs, in a child process.`
        : `${base} Even with the workarounds of scripts/bench/tfjs_node_threads.mjs it failed: ${firstFailure('tfjs-2') ?? 'see the rows'}.`,
    );
  }
  if (ofImpl('tfjs-1').some((r) => r.case.endsWith('-bwd'))) {
    notes.push(
      "tf.grads needs tfjs-core's gradient functions, which its Node bundle leaves out: they are loaded from tfjs-core's own ES module files (scripts/bench/tfjs_gradients.mjs).",
    );
  }
  if (tried('ort-2')) {
    notes.push(
      okSomewhere('ort-2')
        ? 'onnxruntime-web runs multi-threaded in Node (env.wasm.numThreads = 2); the count is fixed per process, so its 2-thread rows run in a child process.'
        : `onnxruntime-web with numThreads = 2 failed in Node: ${firstFailure('ort-2') ?? 'see the rows'}.`,
    );
  }
  const skipped = [
    ...new Set(all.filter((r) => r.impl === 'js-1' && r.status === 'skipped').map((r) => r.label ?? r.case)),
  ];
  if (skipped.length) notes.push(`plain JS skipped where a run would take over ~2 s: ${skipped.join('; ')}.`);
  return notes;
}

// In a browser page all three run threaded as published; what differs is said here.
function browserNotes(tried, okSomewhere, firstFailure) {
  const notes = [];
  if (tried('tfjs-2')) {
    notes.push(
      okSomewhere('tfjs-2')
        ? 'tfjs-wasm sizes its thread pool to navigator.hardwareConcurrency / 2 (at most 4); its 2-thread rows run in a frame of their own that reports twice the cores to it (scripts/bench/platform.mjs).'
        : `tfjs-wasm on 2 threads failed in this browser: ${firstFailure('tfjs-2') ?? 'see the rows'}.`,
    );
  }
  if (tried('ort-2') && !okSomewhere('ort-2'))
    notes.push(
      `onnxruntime-web with numThreads = 2 failed in this browser: ${firstFailure('ort-2') ?? 'see the rows'}.`,
    );
  notes.push(
    "each library's thread count is global to its page: the 2-thread peers run in frames of their own (web/bench/page.js); the plain JS loops run in Node only.",
  );
  return notes;
}
