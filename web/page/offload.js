// Long inputs computed off the main thread: past WORKER_TOKENS tokens, the page's recompute runs
// with the library's worker form (createAttention({ worker: true }), every call a Promise,
// computed in a Web Worker), so that typing and stepping never wait on the library.
//
//   WORKER_TOKENS                       the token count past which the worker computes
//   tokenCount(state) -> n              the tokens the current settings give (before the cap)
//   createOffload(state) -> { recompute() -> Promise<boolean | null>, supersede(), busy }
//     recompute(): recomputeGen (state.js) in the worker, into a shadow of the state that the state
//     takes over once every call has answered: until then the page keeps showing (and stepping
//     through) the previous result. Resolves like recompute(), or null when a newer recompute
//     (here or on the main thread: supersede()) replaced it. The first call starts the worker.
//     busy: a recompute is under way
import { Superseded, driveAsync, loadWorkerLibrary } from './compute.js';
import { MAX_TOKENS } from './input.js';
import { recomputeGen } from './state.js';
import { tokenize } from './tokenize.js';

export const WORKER_TOKENS = 128;

export function tokenCount({ settings, emb }) {
  if (settings.mode === 'worked') return 0;
  return Math.min(MAX_TOKENS, tokenize(settings.text, { vocab: emb }).length);
}

export function createOffload(state) {
  let library = null; // Promise of { attn, ms }
  let generation = 0;
  let running = 0;

  async function recompute() {
    const id = ++generation;
    running += 1;
    try {
      library ??= loadWorkerLibrary();
      const { attn } = await library;
      if (id !== generation) return null;
      // Reads fall through to the state (settings, library, word vectors, model); what recompute
      // writes (input, ctx, steps, sgd) stays on the shadow until it is done.
      const shadow = Object.create(state);
      const hasTokens = await driveAsync(recomputeGen(shadow, attn), { isCurrent: () => id === generation });
      if (id !== generation) return null;
      Object.assign(state, Object.fromEntries(Object.keys(shadow).map((k) => [k, shadow[k]])));
      if (state.ctx) state.ctx.worker = true;
      return hasTokens;
    } catch (e) {
      if (e instanceof Superseded) return null;
      throw e;
    } finally {
      running -= 1;
    }
  }

  return {
    recompute,
    supersede() {
      generation += 1;
    },
    get busy() {
      return running > 0;
    },
  };
}
