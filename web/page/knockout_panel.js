// The knock-out panel (#knock): the trained model's next-word guesses after the followed token
// with every head and with the knocked-out heads (the model view's and the steps' "Knock out"
// toggles), each guess's change in probability; and the attribution chart: each head's direct
// part of the predicted word's logit (ablation.js, model/knockout.js).
//
//   createKnockoutPanel(box, { onChange() }) -> { render(state), toggle(state, layer, head),
//     clear(state), isOut(state, layer, head) }
//     state.knockOut: [{ layer, head }] 0-based, the heads knocked out (shared by the model view,
//     the steps' toggle and this panel); render draws both tables and the chart for
//     settings.focus, or empties the box without the trained model
import { TOP, attributionAt, predictAt } from './ablation.js';
import { esc, fmt, quote } from './format.js';

const pct = (p) => `${(100 * p).toFixed(1)} %`;
const signedPct = (d) => {
  const v = 100 * d;
  if (Math.abs(v) < 0.05) return '±0.0';
  return `${v > 0 ? '+' : '\u2212'}${Math.abs(v).toFixed(1)}`;
};
const headName = ({ layer, head }) => `layer ${layer + 1} head ${head + 1}`;

export const isOut = (state, layer, head) => state.knockOut.some((k) => k.layer === layer && k.head === head);

function probabilities(list) {
  return new Map(list.map((g) => [g.word, g.p]));
}

function guessTable(caption, list, other, changeWord) {
  const rows = list
    .map((g, r) => {
      const q = other.get(g.word);
      const delta = q === undefined ? '' : signedPct(changeWord(g.p, q));
      const cls =
        q === undefined ? '' : changeWord(g.p, q) < -0.0005 ? ' down' : changeWord(g.p, q) > 0.0005 ? ' up' : '';
      return (
        `<tr><td class="num">${r + 1}</td><td>${esc(g.word)}</td><td class="num">${pct(g.p)}</td>` +
        `<td class="num delta${cls}">${q === undefined ? '<span class="muted" title="not in the other top 10">–</span><span class="visually-hidden">not in the other top 10</span>' : delta}</td></tr>`
      );
    })
    .join('');
  return (
    `<table class="knock-table"><caption>${caption}</caption>` +
    `<thead><tr><th scope="col" class="num">#</th><th scope="col">next word</th><th scope="col" class="num">p</th>` +
    `<th scope="col" class="num">change (points)</th></tr></thead><tbody>${rows}</tbody></table>`
  );
}

// One bar per part, scaled to the largest |logit|; positive right (blue), negative left (red).
function chart(a, labels) {
  const rows = [
    ...a.heads.map((h) => ({ name: `Layer ${h.layer + 1} head ${h.head + 1}`, v: h.logit, head: h })),
    { name: 'word and position (X = E + P)', v: a.input },
    { name: 'biases (output, feed-forward)', v: a.bias },
  ];
  const top = Math.max(...rows.map((r) => Math.abs(r.v)), 1e-9);
  const best = a.heads.reduce((x, y) => (y.logit > x.logit ? y : x));
  const body = rows
    .map((r) => {
      const w = (50 * Math.abs(r.v)) / top;
      const side = r.v >= 0 ? `left:50%;width:${w}%` : `left:${50 - w}%;width:${w}%`;
      const mark = r.head === best ? ' class="best"' : '';
      return (
        `<tr${mark}><th scope="row">${r.name}</th><td class="bar-cell"><span class="zero"></span>` +
        `<span class="bar ${r.v >= 0 ? 'pos' : 'neg'}" style="${side}"></span></td><td class="num">${fmt(r.v, 2)}</td></tr>`
      );
    })
    .join('');
  return (
    `<table class="attr-chart" aria-describedby="attr-note"><caption>Parts of the logit of ${quote(esc(a.word))} after ${labels}</caption>` +
    `<thead><tr><th scope="col">part</th><th scope="col"><span class="visually-hidden">bar</span>` +
    `<span aria-hidden="true" class="axis"><span>pushes against</span><span>pushes for</span></span></th>` +
    `<th scope="col" class="num">logit</th></tr></thead><tbody>${body}</tbody>` +
    `<tfoot><tr><th scope="row">sum of the parts</th><td></td><td class="num">${fmt(a.total, 2)}</td></tr>` +
    `<tr><th scope="row">the model's logit</th><td></td><td class="num">${fmt(a.logit, 2)}</td></tr></tfoot></table>`
  );
}

export function createKnockoutPanel(box, { onChange }) {
  box.addEventListener('click', (e) => {
    if (e.target.closest('#knock-clear')) onChange('clear');
  });

  function render(state) {
    const ctx = state.ctx;
    if (!ctx?.trained) {
      box.innerHTML = '';
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const at = state.settings.focus;
    const { base, knocked } = predictAt(state, { at, knockOut: state.knockOut, k: TOP });
    const a = attributionAt(state, at);
    const token = `${quote(esc(ctx.labels[at]))} (word ${at + 1})`;
    const out = state.knockOut.length
      ? `Knocked out: ${state.knockOut.map((k) => `<strong>${headName(k)}</strong>`).join(', ')}. ` +
        `<button type="button" id="knock-clear" class="small-button">Put every head back</button>`
      : 'No head is knocked out: press <em>Knock out</em> under a head above, or in the steps, to switch it off.';
    const pBase = probabilities(base),
      pKnocked = probabilities(knocked);
    const best = a.heads.reduce((x, y) => (y.logit > x.logit ? y : x));
    box.innerHTML =
      `<p class="knock-line">Next word after ${token}: click another token above to ask about it. ${out}</p>` +
      `<div class="knock-tables">` +
      guessTable('With every head', base, pKnocked, (p, q) => q - p) +
      guessTable(
        state.knockOut.length ? 'With the heads knocked out' : 'With the heads knocked out (none yet: the same)',
        knocked,
        pBase,
        (p, q) => p - q,
      ) +
      `</div>` +
      `<p class="field-note">Change: the word's probability with the heads knocked out minus with every head, in percentage points (left: where each of the model's own guesses went; right: where each new guess came from); –: the word is not in the other top 10.</p>` +
      `<h4 class="sub-label">Which head pushed ${quote(esc(a.word))}? Each head's direct part of its logit</h4>` +
      chart(a, token) +
      `<p id="attr-note" class="field-note">Largest push: <strong>${headName(best)}</strong> (${fmt(best.logit, 2)}). ` +
      `Each bar is one head's output at ${token} (its row of the head's output times its rows of W<sub>O</sub>) carried straight to the logit: through the residual stream, the feed-forward block and W<sub>out</sub> to the word's output vector. ` +
      `The feed-forward block is not linear: the split holds its ReLU gates as they are at this token (which of its ${state.model.tensors.b1?.data.length ?? 0} hidden units are on), so the parts add up to the model's logit, but a head's part does not say what would happen without it (that is the knock-out). ` +
      `A layer-1 head's bar is only its direct path: what it changes in layer 2's attention is not in it.</p>`;
  }

  return { render };
}
