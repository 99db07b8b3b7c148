// Long inputs computed off the main thread: past WORKER_TOKENS tokens (limits.js), the page's
// recompute runs with the library's worker form (createAttention({ worker: true }), every call a
// Promise, computed in a Web Worker), so that typing and stepping never wait on the library.
//
//   tokenCount(state) -> n              the tokens the current settings give (before the cap)
//   createOffload(state) -> { recompute() -> Promise<boolean | null>, recomputeBackward() ->
//                             Promise<true | null>, sgdStep(options), supersede(), busy }
//     recompute(): recomputeGen (state.js) in the worker, into a shadow of the state that the state
//     takes over once every call has answered: until then the page keeps showing (and stepping
//     through) the previous result. Resolves like recompute(), or null when a newer recompute
//     (here or on the main thread: supersede()) replaced it. The first call starts the worker;
//     when it cannot start, the calls run on the main thread (and ctx.worker stays false).
//     recomputeBackward(): recomputeBackwardGen (a new followed token or target) the same way, for
//     an input the worker computed; null when a newer recompute of either kind replaced it
//     sgdStep(options) -> Promise of compute.js sgdStep's result, computed in the worker (the
//     SGD panel's step for a long input), or null when a newer recompute replaced the input
//     busy: a recompute or step is under way
import { Superseded, drive, driveAsync, loadWorkerLibrary, sgdStepGen } from './compute.js';
import { MAX_TOKENS } from './limits.js';
import { recomputeBackwardGen, recomputeGen } from './state.js';
import { tokenize } from './tokenize.js';

export function tokenCount({ settings, model }) {
  if (settings.mode === 'worked') return 0;
  return Math.min(MAX_TOKENS, tokenize(settings.text, model.tokenizer).length);
}

export function createOffload(state) {
  let library = null; // Promise of { attn, ms }, or of null when the worker could not start
  let generation = 0; // of the whole recompute: a new one replaces any recompute under way
  let backGeneration = 0; // of the backward alone: a new one replaces the backward under way
  let running = 0;

  // Runs makeGen(shadow, attn) in the worker while isCurrent(); then adopt(shadow).
  async function offloaded(makeGen, shadow, isCurrent, adopt) {
    running += 1;
    try {
      library ??= loadWorkerLibrary().catch((e) => {
        console.warn(`The library's worker form did not start (${e.message}): long inputs run here.`);
        return null;
      });
      const worker = await library;
      if (!isCurrent()) return null;
      // Without a worker, the same calls on the main thread (blocking, as for a short input).
      const result = worker
        ? await driveAsync(makeGen(shadow, worker.attn), { isCurrent })
        : drive(makeGen(shadow, state.attn));
      if (!isCurrent()) return null;
      adopt(shadow, Boolean(worker));
      return result;
    } catch (e) {
      if (e instanceof Superseded) return null;
      throw e;
    } finally {
      running -= 1;
    }
  }

  function recompute() {
    const id = ++generation;
    // Reads fall through to the state (settings, library, model); what recompute
    // writes (input, ctx, steps, sgd) stays on the shadow until it is done.
    return offloaded(
      recomputeGen,
      Object.create(state),
      () => id === generation,
      (shadow, inWorker) => {
        Object.assign(state, Object.fromEntries(Object.keys(shadow).map((k) => [k, shadow[k]])));
        if (state.ctx) state.ctx.worker = inWorker;
      },
    );
  }

  function recomputeBackward() {
    const id = ++backGeneration,
      { ctx } = state;
    const shadow = Object.create(state);
    shadow.ctx = Object.create(ctx); // ctx.back goes on the shadow's ctx
    return offloaded(
      recomputeBackwardGen,
      shadow,
      () => id === backGeneration && state.ctx === ctx,
      () => {
        Object.assign(state, { steps: shadow.steps, sgd: shadow.sgd });
        state.ctx.back = shadow.ctx.back;
      },
    ).then((r) => (r === null ? null : true));
  }

  // One SGD step (compute.js sgdStepGen) in the worker, for the input it computed.
  function sgdStep(options) {
    const { ctx } = state;
    return offloaded(
      (shadow, attn) => sgdStepGen(attn, options),
      null,
      () => state.ctx === ctx,
      () => {},
    );
  }

  return {
    recompute,
    recomputeBackward,
    sgdStep,
    supersede() {
      generation += 1;
    },
    get busy() {
      return running > 0;
    },
  };
}
