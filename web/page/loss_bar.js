// The bar above the backward steps: the selects for the loss's i (the followed token) and j (the
// target), and the loss L = ½‖y_i − x_j‖² they give.
//
//   renderLossBar(ctx)    selects #loss-row and #target, line #loss-line
import { esc, fmt } from './format.js';

const $ = (id) => document.getElementById(id);

export function renderLossBar(ctx) {
  const options = ctx.labels.map((label, k) => `<option value="${k}">${k + 1} ${esc(label)}</option>`).join('');
  for (const [id, value] of [
    ['loss-row', ctx.back.query],
    ['target', ctx.back.target],
  ]) {
    const select = $(id);
    if (select.dataset.options !== options) {
      select.innerHTML = options;
      select.dataset.options = options;
    }
    select.value = String(value);
  }
  const I = ctx.back.query + 1,
    J = ctx.back.target + 1;
  $('loss-line').innerHTML =
    `<var>L</var> = ½ ‖<var>y</var><sub>${I}</sub> − <var>x</var><sub>${J}</sub>‖² = <strong>${fmt(ctx.back.loss)}</strong>`;
}
