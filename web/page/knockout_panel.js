// The knock-out panel (#knock): the trained model's next-token guesses after the followed token
// with every head and with the knocked-out heads (the model view's and the steps' "Knock out"
// toggles, zero or mean ablation), and every head ranked by what it causes: knocking it out
// alone (zero and mean ablation) changes the copy probability on the text and the predicted
// token's probability; beside that, its direct part in logit(predicted) − logit(runner-up), or
// another of the top 10 against the runner-up (ablation.js, model/knockout.js).
//
//   createKnockoutPanel(box, { onChange(what) }) -> { render(state) }
//     state.knockOut: [{ layer, head }] 0-based, the heads knocked out (shared by the model view,
//     the steps' toggle and this panel); state.ablation 'zero' | 'mean'; render draws the
//     tables for settings.focus, or empties the box without the trained model. onChange('clear')
//     when "Put every head back" is pressed, onChange('ablation') after the ablation or the
//     attribution's token changed (the panel has set it)
import { TOP, attributionAt, headEffects, predictAt } from './ablation.js';
import { esc, fmt, quote } from './format.js';
import { pieceLabel } from './tokenize.js';

// a token as the page shows it (" to" is "␣to"), escaped
const tok = (w) => esc(pieceLabel(w));

const pct = (p) => `${(100 * p).toFixed(1)} %`;
const signedPct = (d) => {
  const v = 100 * d;
  if (Math.abs(v) < 0.05) return '±0.0';
  return `${v > 0 ? '+' : '\u2212'}${Math.abs(v).toFixed(1)}`;
};
const headName = ({ layer, head }) => `layer ${layer + 1} head ${head + 1}`;
const same = (a, b) => a.layer === b.layer && a.head === b.head;

export const isOut = (state, layer, head) => state.knockOut.some((k) => same(k, { layer, head }));

function probabilities(list) {
  return new Map(list.map((g) => [g.word, g.p]));
}

const deltaClass = (d) => (d < -0.0005 ? ' down' : d > 0.0005 ? ' up' : '');

function guessTable(caption, list, other, changeWord) {
  const rows = list
    .map((g, r) => {
      const q = other.get(g.word);
      const d = q === undefined ? 0 : changeWord(g.p, q);
      return (
        `<tr><td class="num">${r + 1}</td><td>${tok(g.word)}</td><td class="num">${pct(g.p)}</td>` +
        `<td class="num delta${q === undefined ? '' : deltaClass(d)}">${q === undefined ? '<span class="muted" title="not in the other top 10">–</span><span class="visually-hidden">not in the other top 10</span>' : signedPct(d)}</td></tr>`
      );
    })
    .join('');
  return (
    `<table class="knock-table"><caption>${caption}</caption>` +
    `<thead><tr><th scope="col" class="num">#</th><th scope="col">next token</th><th scope="col" class="num">p</th>` +
    `<th scope="col" class="num">change (points)</th></tr></thead><tbody>${rows}</tbody></table>`
  );
}

// The share of the copy probability a knock-out removes, as a signed percentage.
const removed = (copy, knocked) => (copy > 0 ? (copy - knocked) / copy : 0);
const removedCell = (share, also = '') => {
  const v = Math.round(100 * share);
  return `<td class="num delta${deltaClass(-share)}${also && ` ${also}`}">${v < 0 ? '\u2212' : ''}${Math.abs(v)} %</td>`;
};
const changeCell = (d, also = '') => `<td class="num delta${deltaClass(d)}${also && ` ${also}`}">${signedPct(d)}</td>`;
// The cells of the zero ablation's pair of columns, then the mean's: make(class) each.
const both = (make) => make('abl-zero') + make('abl-mean');

// One row per head, ranked by the copy its mean ablation removes; each with its bar of the
// attribution (scaled to the largest |part|; for right, blue; against left, red), then what its
// zero and its mean ablation change, each pair of columns together (abl-zero, abl-mean: on a
// narrow screen only `ablation`'s pair shows, style.css); then the parts that are not heads, and
// the sum.
function ranking(e, a, labels, ablation) {
  const part = (h) => a.parts.find((x) => x.part === 'head' && same(x, h));
  const parts = a.parts.map((x) => x.diff);
  const top = Math.max(...parts.map(Math.abs), 1e-9);
  const bar = (v) => {
    const w = (50 * Math.abs(v)) / top;
    const side = v >= 0 ? `left:50%;width:${w}%` : `left:${50 - w}%;width:${w}%`;
    return `<td class="bar-cell"><span class="zero"></span><span class="bar ${v >= 0 ? 'pos' : 'neg'}" style="${side}"></span></td><td class="num">${fmt(v, 2)}</td>`;
  };
  const byAttr = a.parts.filter((x) => x.part === 'head').reduce((x, y) => (y.diff > x.diff ? y : x));
  const named = (h) => e.induction.some((k) => same(k, h));
  const rows = [...e.heads]
    .sort((x, y) => removed(e.copy, y.mean.copy) - removed(e.copy, x.mean.copy))
    .map((h) => {
      const mark = same(h, byAttr) ? ' class="best"' : '';
      const tag = named(h) ? ' <span class="tag">induction</span>' : '';
      return (
        `<tr${mark}><th scope="row"><span aria-hidden="true">L${h.layer + 1} H${h.head + 1}</span><span class="visually-hidden">${headName(h)}</span>${tag}</th>` +
        bar(part(h).diff) +
        removedCell(removed(e.copy, h.zero.copy), 'abl-zero') +
        changeCell(h.zero.p - e.predicted.p, 'abl-zero') +
        removedCell(removed(e.copy, h.mean.copy), 'abl-mean') +
        changeCell(h.mean.p - e.predicted.p, 'abl-mean') +
        `</tr>`
      );
    })
    .join('');
  const rest = [
    ['embedding', 'token and position (X)'],
    ['feed-forward', 'feed-forward block'],
    ['bias', 'output bias'],
  ]
    .map(([key, name]) => {
      const x = a.parts.find((y) => y.part === key);
      return `<tr><th scope="row">${name}</th>${bar(x.diff)}${both((c) => `<td colspan="2" class="muted ${c}">not a head</td>`)}</tr>`;
    })
    .join('');
  const what = quote(tok(a.word)) + ' \u2212 ' + quote(tok(a.against));
  const copyWhere =
    e.source === 'text'
      ? `the copy at ${e.copyPositions} token${e.copyPositions === 1 ? '' : 's'} of your text`
      : 'the copy on your text written twice';
  return (
    `<p id="head-rank-caption" class="head-rank-caption">Every head (L layer, H head) knocked out alone, ranked by how much of ${copyWhere} it removes (mean ablation); and its direct part of logit ${what} after ${labels}</p>` +
    `<div class="table-scroll" tabindex="0" role="region" aria-labelledby="head-rank-caption"><table class="attr-chart head-rank" data-ablation="${ablation}" aria-labelledby="head-rank-caption" aria-describedby="attr-note">` +
    `<thead><tr><th scope="col" rowspan="2">head</th><th scope="colgroup" colspan="2">logit ${what}</th>` +
    both(
      (c) => `<th scope="colgroup" colspan="2" class="num ${c}">${c === 'abl-zero' ? 'zero' : 'mean'} ablation</th>`,
    ) +
    `</tr><tr><th scope="col"><span class="visually-hidden">bar</span><span aria-hidden="true" class="axis"><span>against</span><span>for</span></span></th><th scope="col" class="num">part</th>` +
    both(
      (c) =>
        `<th scope="col" class="num ${c}">copy removed</th><th scope="col" class="num ${c}">p(${tok(e.predicted.word)}), points</th>`,
    ) +
    `</tr></thead><tbody>${rows}${rest}</tbody>` +
    `<tfoot><tr><th scope="row">sum of the parts</th><td></td><td class="num">${fmt(a.total, 2)}</td>${both((c) => `<td colspan="2" class="${c}"></td>`)}</tr>` +
    `<tr><th scope="row">the model's difference</th><td></td><td class="num">${fmt(a.diff, 2)}</td>${both((c) => `<td colspan="2" class="${c}"></td>`)}</tr></tfoot></table></div>`
  );
}

export function createKnockoutPanel(box, { onChange }) {
  let state = null;
  box.addEventListener('click', (e) => {
    if (e.target.closest('#knock-clear')) onChange('clear');
  });
  box.addEventListener('change', (e) => {
    if (e.target.id === 'knock-ablation') state.ablation = e.target.value;
    else if (e.target.id === 'attr-word') state.attrWord = { at: state.settings.focus, word: e.target.value };
    else return;
    onChange('ablation');
  });

  function render(s) {
    state = s;
    const ctx = state.ctx;
    if (!ctx?.trained) {
      box.innerHTML = '';
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const at = state.settings.focus;
    const ablation = state.ablation ?? 'zero';
    const { base, knocked } = predictAt(state, { at, knockOut: state.knockOut, ablation, k: TOP });
    const chosen = state.attrWord?.at === at && base.some((g) => g.word === state.attrWord.word);
    const a = attributionAt(state, { at, word: chosen ? state.attrWord.word : undefined });
    const e = headEffects(state);
    const token = `${quote(esc(ctx.labels[at]))} (token ${at + 1})`;
    const out = state.knockOut.length
      ? `Knocked out: ${state.knockOut.map((k) => `<strong>${headName(k)}</strong>`).join(', ')}. ` +
        `<button type="button" id="knock-clear" class="small-button">Put every head back</button>`
      : 'No head is knocked out: press <em>Knock out</em> under a head above, or in the steps, to switch it off.';
    const option = (v, label, on) => `<option value="${esc(v)}"${on ? ' selected' : ''}>${label}</option>`;
    const ablationSelect =
      `<label class="inline"><span>Knocked out means</span><select id="knock-ablation">` +
      option('zero', 'its output set to zero', ablation === 'zero') +
      option('mean', 'its mean output on held-out text', ablation === 'mean') +
      `</select></label>`;
    const wordSelect =
      `<label class="inline"><span>Attribution of</span><select id="attr-word">` +
      base.map((g) => option(g.word, `${tok(g.word)} (${pct(g.p)})`, g.c === a.c)).join('') +
      `</select><span>against the runner-up</span></label>`;
    const pBase = probabilities(base),
      pKnocked = probabilities(knocked);
    const byAttr = a.parts.filter((x) => x.part === 'head').reduce((x, y) => (y.diff > x.diff ? y : x));
    const names = e.induction.map(headName);
    const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0];
    const copyNote =
      `With every head the copy has p ${pct(e.copy)} on ${e.source === 'text' ? 'your text' : 'your text written twice (it repeats no token of its own)'}. ` +
      `Named the induction head${names.length > 1 ? 's' : ''} by that effect: <strong>${list}</strong> (a head after layer 1 whose mean ablation alone removes at least 20 % of it, else the one that removes most); ` +
      `knocking ${names.length > 1 ? 'them' : 'it'} out removes ${Math.round(100 * removed(e.copy, e.inductionCopy.mean))} % of the copy (mean ablation; ${Math.round(100 * removed(e.copy, e.inductionCopy.zero))} % with zero).`;
    box.innerHTML =
      `<p class="knock-line">Next token after ${token}: click another token above to ask about it. ${out}</p>` +
      `<p class="knock-line">${ablationSelect}</p>` +
      `<div class="knock-tables">` +
      guessTable('With every head', base, pKnocked, (p, q) => q - p) +
      guessTable(
        state.knockOut.length ? 'With the heads knocked out' : 'With the heads knocked out (none yet: the same)',
        knocked,
        pBase,
        (p, q) => p - q,
      ) +
      `</div>` +
      `<p class="field-note">Change: the token's probability with the heads knocked out minus with every head, in percentage points (left: where each of the model's own guesses went; right: where each new guess came from); –: the token is not in the other top 10.</p>` +
      `<h4 class="sub-label">Heads ranked by what they cause</h4>` +
      `<p class="field-note">${copyNote}</p>` +
      `<p class="knock-line">${wordSelect}</p>` +
      ranking(e, a, token, ablation) +
      `<p id="attr-note" class="field-note">Copy removed: the share of the copy probability gone with the head knocked out alone (zero: its output set to 0; mean: set to its mean over ${state.model.manifest.heldOut.windows} held-out windows of the model's corpus, which keeps what the head adds on any text and removes only what it adds for this one). ` +
      `p(${tok(e.predicted.word)}): the change of the predicted token's probability after ${token}, in points. ` +
      `<span class="narrow-only">On a narrow screen the table shows the knock-out chosen under <em>Knocked out means</em> (${ablation === 'zero' ? 'zero' : 'mean'}). </span>` +
      `Part: the head's output at ${token} carried straight to the logits (through W<sub>out</sub>, past the feed-forward block, which adds its own part), along ${quote(tok(a.word))} minus ${quote(tok(a.against))}; the parts sum to the model's difference. ` +
      `Largest part: <strong>${headName(byAttr)}</strong> (${fmt(byAttr.diff, 2)}). A part is what a head writes, not what happens without it: a layer-1 head also changes what layer 2 and the feed-forward block compute, which only its knock-out shows.</p>`;
  }

  return { render };
}
