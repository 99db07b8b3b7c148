// window.attentionPage, a debug hook for tests and the curious (read-only):
//   ready      Promise resolved after the first render (rejected when loading failed)
//   version    a counter, increased after every render (new input, setting, step or followed row)
//   state      a snapshot: { mode: 'sentence'|'worked', text, n, tokens: [{ text, id, start, end }]
//              (the trained model's tokens of the text: text the piece, id the token, start, end
//              its UTF-16 offsets; the worked example's have id null),
//              truncatedFrom (token count before the cap, or null), projection: 'identity'|'random'|'trained',
//              layer (the trained model's layer the steps show, 0-based, or null), predictions
//              (the trained model's [{ word, p }] × 5 after the followed token, or null),
//              seed, heads, dK, head (followed head, 0-based), causal, scaling, positions,
//              step (0-based), stepId, focus (followed row, 0-based; also the loss's i), target
//              (the loss's j, 0-based), loss, lr (the SGD learning rate), sgdLosses (the loss
//              before and after each SGD step taken, [] before the first), sgdWorker (the latest
//              SGD step ran in the library's worker form: a long input's), backend, isolated,
//              renderMs, worker (true when the library's worker form computed the input: a long one) }
//   steps      [{ id, title, matrices: [{ name, shape: [rows, cols], data: number[] }] }] for all
//              steps: the exact float32 values each heatmap draws, row-major
//   timings    [{ call, detail, ms }]: the library calls behind the current input (forward,
//              backward, and the latest SGD step)
//   cellPoint(name, i, j) -> { x, y, w, h }: the viewport point of cell (i, j) of the current
//              step's heatmap `name`, scrolled into view (to hover it), and the cell's size
//   modelView  the model view's { top, tiles: [{ layer, head, description, current, data }] }, or
//              null without the trained model (model_view.js)
//   compare    the head comparison's { a: { layer, head }, b, n, top, data: { a, b, diff } }, or
//              null (head_compare.js); compareCellPoint(name, i, j) as cellPoint, for its heatmaps
//
//   predict({ at, knockOut, ablation }) -> [{ word, p }] × 10: the trained model's most likely next
//              tokens after token `at` (0-based), best first (word: the token's piece), with the heads in knockOut
//              ([{ layer, head }], 0-based, numbered as the model view's tiles) knocked out:
//              ablation 'zero' (the default: their outputs 0) or 'mean' (their mean over held-out
//              text) (ablation.js); throws an Error that says what to give for a bad `at`, head or
//              ablation, and changes nothing
//   attribution({ at, word }) -> [{ part, layer, head, logit, diff }]: logit(c) − logit(r) after
//              token `at` split into its parts (ablation.js attributionAt): c the predicted token
//              (or `word`), r the runner-up; one entry per head (part 'head'), then 'embedding',
//              'feed-forward' and 'bias' (layer and head null); the diffs sum to the model's
//              logit(c) − logit(r), the logits to its logit(c)
//   inductionHeads  [{ layer, head }]: the induction heads named for the current text by what
//              knocking them out does to the copy (ablation.js headEffects), or null without the
//              trained model
//   headEffects the knock-out table's numbers: { source, copy, copyPositions, predicted, heads:
//              [{ layer, head, zero: { copy, p }, mean: { copy, p } }], induction, inductionCopy },
//              or null without the trained model
//   training   the live training's { state, step, loss, induction (the best head's), copy (the
//              latest copy probability), seconds (training time), heads: [{ layer, head,
//              induction, prefix, copying }] (each at its latest measurement) } (train_panel.js),
//              or null before Start
//
//   installDebugHook(state, stepView, views) -> { resolve(), reject(error) }   settles `ready`;
//   views: { modelView, compare } (their snapshot()s)
import { attributionAt, headEffects, predictAt } from './ablation.js';
import { allTimings, effectiveDK, effectiveHeads } from './state.js';

export function installDebugHook(state, stepView, views = {}) {
  let settle;
  const ready = new Promise((resolve, reject) => {
    settle = { resolve, reject };
  });
  ready.catch(() => {}); // reported on the page and in the console already
  window.attentionPage = {
    ready,
    get version() {
      return state.version;
    },
    get state() {
      const { settings: s, ctx, input, sgd, attn } = state;
      return {
        mode: s.mode,
        text: s.text,
        n: ctx?.n ?? 0,
        tokens: (input?.tokens ?? []).map(({ text, id = null, start = null, end = null }) => ({
          text,
          id,
          start,
          end,
        })),
        truncatedFrom: input?.truncatedFrom ?? null,
        projection: s.projection,
        seed: s.seed,
        layer: ctx?.layer ?? null,
        predictions: ctx?.trained ? ctx.trained.predictions[s.focus].map((e) => ({ ...e })) : null,
        heads: effectiveHeads(state),
        dK: state.model ? effectiveDK(state) : null,
        head: s.head,
        causal: s.causal,
        scaling: s.scaling,
        positions: ctx?.positions ?? false,
        step: s.step,
        stepId: state.steps[s.step]?.id ?? null,
        focus: s.focus,
        target: ctx?.back?.target ?? null,
        loss: ctx?.back?.loss ?? null,
        lr: s.lr,
        sgdLosses: sgd ? [...sgd.losses] : [],
        sgdWorker: sgd?.worker === true,
        backend: attn?.backend ?? null,
        isolated: globalThis.crossOriginIsolated === true,
        renderMs: stepView.renderMs,
        worker: ctx?.worker === true,
      };
    },
    get steps() {
      return state.steps.map((s) => ({
        id: s.id,
        title: s.title,
        matrices: s.matrices.map((m) => ({ name: m.name, shape: [...m.shape], data: Array.from(m.data) })),
      }));
    },
    get timings() {
      return allTimings(state).map((t) => ({ ...t }));
    },
    cellPoint: (name, i, j) => stepView.cellPoint(name, i, j),
    get modelView() {
      return views.modelView?.snapshot() ?? null;
    },
    get compare() {
      return views.compare?.snapshot() ?? null;
    },
    compareCellPoint: (name, i, j) => views.compare.cellPoint(name, i, j),
    predict: ({ at, knockOut = [], ablation } = {}) =>
      predictAt(state, { at, knockOut, ablation }).knocked.map(({ word, p }) => ({ word, p })),
    attribution: ({ at, word } = {}) => attributionAt(state, { at, word }).parts.map((x) => ({ ...x })),
    get inductionHeads() {
      return state.ctx?.trained ? headEffects(state).induction.map((h) => ({ ...h })) : null;
    },
    get headEffects() {
      return state.ctx?.trained ? structuredClone(headEffects(state)) : null;
    },
    get training() {
      const t = window.attentionTraining;
      if (!t || t.state === 'idle') return null;
      return {
        state: t.state,
        step: t.step,
        loss: t.losses.at(-1) ?? null,
        induction: t.induction.at(-1) ?? null,
        copy: t.copies.at(-1)?.p ?? null,
        seconds: t.seconds.at(-1) ?? 0,
        heads: t.heads,
      };
    },
  };
  return settle;
}
