// The side panel: the followed token's row through the current step, as text (the step's
// `inspect`, see steps/index.js), under a heading that names the token.
//
//   renderInspector(element, step, ctx, i)   i: the followed token's row (0-based)
//   A <details data-more="key"> in the step's HTML is filled with step.inspectMore(ctx, i, key)
//   when it first opens.
//
// On the backward steps the followed token is the loss's i, so its row is the one row of dY, dZ,
// dA, dS and dQ that is not zero; the panel opens with the loss it is pulled by.
import { esc, quote } from './format.js';
import { sub } from './steps/readout.js';

export function renderInspector(el, step, ctx, i) {
  const I = i + 1;
  const name = ctx.labels[i];
  let body = step.inspect(ctx, i);
  if (step.part === 'back') {
    body = `<p class="note loss-note">The loss is on this token's output: L = ½‖y${sub(I)} − x${sub(ctx.back.target + 1)}‖², pulling it toward ${esc(quote(ctx.labels[ctx.back.target]))}.</p>${body}`;
  }
  el.innerHTML =
    `<h2 id="inspector-title">Following <span class="tok">${esc(quote(name))}</span> <span class="muted">token ${I} of ${ctx.n}</span></h2>` +
    '<p class="hint">Click a token or a row label to follow another. Its row is outlined in every matrix.</p>' +
    `<div class="insp-body">${body}</div>`;
  // A disclosure the step fills when it opens (its `inspectMore`: steps/index.js).
  for (const details of el.querySelectorAll('details[data-more]'))
    details.addEventListener('toggle', () => {
      if (!details.open || details.dataset.filled) return;
      details.dataset.filled = 'true';
      details.insertAdjacentHTML('beforeend', step.inspectMore(ctx, i, details.dataset.more));
    });
}
