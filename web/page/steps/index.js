// The steps, in order: forward.js's then backward.js's. Each step is one descriptor, so adding a
// step means adding one descriptor to one of those lists; prose that names another step takes its
// number from stepNumber(id), so a step can move without a sentence going wrong:
//
//   id        stable name (window.attentionPage's stepId, the tests)
//   part      'one' (one head), 'all' (all heads) or 'back' (backward): its group of pills
//   scope     backward steps only: 'head' or 'layer', for the kicker
//   label     the short name on its pill ('QKᵀ')
//   source    the library call its numbers come from, as code; null: the page computed them
//   timing    the call, as named in compute.js's timings, whose time the source line gives
//   view(ctx) -> { title, titleHtml?, formulaHtml, shapes, explainHtml, sourceHtml?,
//                  detailsHtml?, matrices }
//             what the step shows; sourceHtml replaces the source line, detailsHtml the summary
//             of the matrices placed behind a disclosure; matrices: heatmap specs (steps/markup.js)
//   inspect(ctx, i) -> HTML     the side panel for the followed row i
//   inspectMore(ctx, i, key) -> HTML   optional: the body of the panel's <details data-more="key">,
//                                      made when it first opens (inspector.js)
//   hand(ctx) -> HTML | null    optional: the worked example's values by hand (worked_example.js)
//   sgd       optional, true: the gradient-descent panel (sgd_panel.js) shows under the step
//
// ctx: { worked, labels (n tokens), n, dModel, heads, dK, dV, head, causal, scaling,
//        positions, projection, seed, e (n,d_model) | null, p (n,d_model) | null, x (n,d_model),
//        result (compute.runGen's), back (compute.runBackwardGen's) }
import { BACKWARD_STEPS } from './backward.js';
import { FORWARD_STEPS } from './forward.js';

export const STEPS = [...FORWARD_STEPS, ...BACKWARD_STEPS];

// 'softmax' -> 6: the step's number as the page shows it (1-based, in STEPS's order).
// forward.js and backward.js import this module back; they call stepNumber only while a view is
// built, after STEPS exists (so nothing imports forward.js or backward.js but this module).
export function stepNumber(id) {
  const i = STEPS.findIndex((s) => s.id === id);
  if (i < 0) throw new Error(`stepNumber: no step has the id '${id}' (ids: ${STEPS.map((s) => s.id).join(', ')})`);
  return i + 1;
}

const built = (ctx) => (step) => ({ ...step, ...step.view(ctx) });
// ctx.result -> the forward steps built for it: a new backward (another followed token or target)
// keeps them, since no forward view reads ctx.back (and a 512-token input's take a while).
const forwardOf = new WeakMap();

// The steps for one input: each descriptor with its view's fields.
export function buildSteps(ctx) {
  if (!forwardOf.has(ctx.result)) forwardOf.set(ctx.result, FORWARD_STEPS.map(built(ctx)));
  return [...forwardOf.get(ctx.result), ...BACKWARD_STEPS.map(built(ctx))];
}
