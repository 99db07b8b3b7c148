// The side panel: the followed token's query row through the current step, as text, so every
// number the heatmaps draw for that row can also be read by keyboard and screen-reader users.
//
//   renderInspector(element, step, ctx, i)   i: the followed token's row (0-based)
//
// For step 6 it shows the softmax worked out: the row maximum, exp(M_ij − m_i), their sum and the
// weights; for step 3 with d_k <= 4 (the worked example) the dot products term by term. On the
// backward steps the followed token is the loss's i, so its row is the one row of dY, dZ, dA, dS
// and dQ that is not zero; for step 16 it lists A, dA, the row's Σ A·dA and dS side by side.
import { esc, fmt, quote } from './format.js';

const row = (t, i) => {
  const cols = t.shape[t.shape.length - 1];
  return t.data.subarray(i * cols, (i + 1) * cols);
};

// A vector as a numbered list: 1-based indices, values with 4 decimals.
function vectorList(values, { groupSize = 0 } = {}) {
  const items = Array.from(values, (x, c) => {
    const head = groupSize && c % groupSize === 0 ? ' class="group-start"' : '';
    return `<li${head}><span class="i">${c + 1}</span> <span class="val">${fmt(x)}</span></li>`;
  });
  return `<ol class="vec">${items.join('')}</ol>`;
}

function table(headers, rows, highlight) {
  const head = headers.map((h) => `<th scope="col">${h}</th>`).join('');
  const body = rows.map((cells, r) => {
    const [first, ...rest] = cells;
    return `<tr${r === highlight ? ' class="self"' : ''}><th scope="row">${first}</th>${rest.map((c) => `<td>${c}</td>`).join('')}</tr>`;
  }).join('');
  return `<div class="table-box"><table class="row-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

const keyCell = (ctx, j) => `<span class="k-idx">${j + 1}</span> ${esc(ctx.labels[j])}`;

export function renderInspector(el, step, ctx, i) {
  const s = ctx.result.single;
  const m = ctx.result.multi;
  const n = ctx.n;
  const name = ctx.labels[i];
  let body = '';
  const sub = (x) => `<sub>${x}</sub>`;
  const I = i + 1;

  switch (step.id) {
    case 'x': {
      let note = '';
      if (ctx.unknown[i]) note = `<p class="note unknown-note">${quote(esc(name))} is not in the vocabulary: this row is a stand-in vector (see the legend under the tokens), not a learned one.</p>`;
      if (ctx.positions) {
        body = `${note}<p>x${sub(I)} = e${sub(I)} + p${sub(I)} (word vector plus position ${I}), ${ctx.dModel} numbers:</p>${vectorList(row(ctx.x, i))}`;
      } else {
        body = `${note}<p>x${sub(I)}, ${ctx.dModel} numbers:</p>${vectorList(row(ctx.x, i))}`;
      }
      break;
    }
    case 'qkv':
      body = `<h3>q${sub(I)} = x${sub(I)}W<sub>Q</sub></h3>${vectorList(row(s.q, i))}` +
        `<h3>k${sub(I)} = x${sub(I)}W<sub>K</sub></h3>${vectorList(row(s.k, i))}` +
        `<h3>v${sub(I)} = x${sub(I)}W<sub>V</sub></h3>${vectorList(row(s.v, i))}`;
      break;
    case 'scores': {
      const q = row(s.q, i);
      const terms = ctx.dK <= 4;
      const rows = Array.from({ length: n }, (_, j) => {
        const k = row(s.k, j);
        const cells = [keyCell(ctx, j)];
        if (terms) cells.push(Array.from(q, (qc, c) => `${fmt(qc, 0 === qc % 1 ? 0 : 4)}·${fmt(k[c], 0 === k[c] % 1 ? 0 : 4)}`).join(' + '));
        cells.push(fmt(s.scores.data[i * n + j]));
        return cells;
      });
      body = `<p>S${sub(`${I}j`)} = q${sub(I)} · k${sub('j')} for every key j:</p>` +
        table(['key j', ...(terms ? ['q·k term by term'] : []), `S${sub(`${I}j`)}`], rows, i);
      break;
    }
    case 'scale': {
      const rows = Array.from({ length: n }, (_, j) => [keyCell(ctx, j), fmt(s.scores.data[i * n + j]), fmt(s.scaled.data[i * n + j])]);
      body = `<p>${ctx.scaling ? `Each score divided by √${ctx.dK} = ${fmt(Math.sqrt(ctx.dK))}` : 'Scaling off: multiplied by 1'}:</p>` +
        table(['key j', `S${sub(`${I}j`)}`, `S′${sub(`${I}j`)}`], rows, i);
      break;
    }
    case 'mask': {
      const rows = Array.from({ length: n }, (_, j) => [keyCell(ctx, j), fmt(s.scaled.data[i * n + j]), fmt(s.masked.data[i * n + j])]);
      const what = ctx.causal
        ? `Token ${I} sees keys 1 to ${I}; keys after it become −∞.`
        : 'No mask: every key stays.';
      body = `<p>${what}</p>${table(['key j', `S′${sub(`${I}j`)}`, `M${sub(`${I}j`)}`], rows, i)}`;
      break;
    }
    case 'softmax': {
      const z = Array.from(row(s.masked, i));
      const mx = Math.max(...z);
      const ex = z.map((x) => Math.exp(x - mx));
      const total = ex.reduce((a, b) => a + b, 0);
      const w = row(s.weights, i);
      const rows = z.map((x, j) => [keyCell(ctx, j), fmt(x), fmt(ex[j]), fmt(w[j])]);
      const wsum = w.reduce((a, b) => a + b, 0);
      body = `<ol class="recipe"><li>Row maximum m${sub(I)} = ${fmt(mx)}.</li><li>exp(M${sub(`${I}j`)} − m${sub(I)}) for every key; their sum is ${fmt(total)}.</li><li>Divide each by the sum: A${sub(`${I}j`)}.</li></ol>` +
        table(['key j', `M${sub(`${I}j`)}`, 'e<sup>M−m</sup>', `A${sub(`${I}j`)}`], rows, i) +
        `<p class="sum-line">Σ<sub>j</sub> A${sub(`${I}j`)} = <strong>${fmt(wsum)}</strong></p>`;
      break;
    }
    case 'weighted': {
      const w = Array.from(row(s.weights, i));
      const order = w.map((x, j) => j).sort((a, b) => w[b] - w[a]);
      const rows = order.map((j) => [keyCell(ctx, j), fmt(w[j])]);
      body = `<p>z${sub(I)} = Σ<sub>j</sub> A${sub(`${I}j`)} v${sub('j')}. The weights, largest first:</p>${table(['key j', `A${sub(`${I}j`)}`], rows, order.indexOf(i))}` +
        `<h3>z${sub(I)}, ${s.output.shape[1]} numbers</h3>${vectorList(row(s.output, i))}`;
      break;
    }
    case 'heads': {
      const parts = m.heads.map((hd, k) => {
        const w = Array.from(row(hd.weights, i));
        const top = w.map((x, j) => j).sort((a, b) => w[b] - w[a]).slice(0, 3);
        const summary = top.map((j) => `${esc(ctx.labels[j])} ${fmt(w[j], 2)}`).join(', ');
        const rows = w.map((x, j) => [keyCell(ctx, j), fmt(x)]);
        return `<details><summary><strong>head ${k + 1}</strong>: ${summary}</summary>${table(['key j', 'A'], rows, i)}</details>`;
      });
      body = `<p>Where token ${I} looks in each head (the top three keys; open a head for its whole row):</p>${parts.join('')}`;
      break;
    }
    case 'concat':
      body = `<p>c${sub(I)}: ${ctx.heads} blocks of ${ctx.dV}, one per head:</p>${vectorList(row(m.concat, i), { groupSize: ctx.dV })}`;
      break;
    case 'wo':
      body = `<p>y${sub(I)} = c${sub(I)}W<sub>O</sub>. The row c${sub(I)} that goes in:</p>${vectorList(row(m.concat, i), { groupSize: ctx.dV })}`;
      break;
    case 'output':
      body = `<h3>y${sub(I)}, ${ctx.dModel} numbers</h3>${vectorList(row(m.output, i))}`;
      break;
    default:
      body = ctx.back && step.part === 'back' ? backwardBody(step, ctx, i) : '';
  }
  if (step.part === 'back') {
    body = `<p class="note loss-note">The loss is on this token's output: L = ½‖y${sub(I)} − x${sub(ctx.back.target + 1)}‖², pulling it toward ${esc(quote(ctx.labels[ctx.back.target]))}.</p>${body}`;
  }

  el.innerHTML = `<h2 id="inspector-title">Following <span class="tok">${esc(quote(name))}</span> <span class="muted">token ${I} of ${n}</span></h2>` +
    '<p class="hint">Click a token or a row label to follow another. Its row is outlined in every matrix.</p>' +
    `<div class="insp-body">${body}</div>`;
}

// The backward steps' side panel for row i (the loss's i).
function backwardBody(step, ctx, i) {
  const b = ctx.back;
  const g = b.grads;
  const n = ctx.n;
  const sub = (x) => `<sub>${x}</sub>`;
  const I = i + 1, J = b.target + 1;
  const isMasked = (j) => ctx.causal && j > i;
  const maskMark = '<span class="masked-swatch inline" aria-hidden="true"></span><span class="visually-hidden"> (masked)</span>';
  const maskNote = ctx.causal && i < n - 1 ? `<p class="hint"><span class="masked-swatch inline" aria-hidden="true"></span> a masked key (j > ${I}).</p>` : '';
  switch (step.id) {
    case 'loss':
      return `<p>L = ½ Σ${sub('c')} (y${sub(`${I}c`)} − x${sub(`${J}c`)})² = <strong>${fmt(b.loss)}</strong></p>` +
        `<h3>Row ${I} of dY = y${sub(I)} − x${sub(J)}, ${ctx.dModel} numbers</h3>${vectorList(row(b.dOutput, i))}` +
        `<details><summary>y${sub(I)}, the output row</summary>${vectorList(row(b.lossRows, 0))}</details>` +
        `<details><summary>x${sub(J)}, the target row</summary>${vectorList(row(b.lossRows, 1))}</details>`;
    case 'dhead':
      return `<h3>Row ${I} of dC, ${ctx.heads} block${ctx.heads > 1 ? 's' : ''} of ${ctx.dV}</h3>${vectorList(row(b.dConcat, i), { groupSize: ctx.heads > 1 ? ctx.dV : 0 })}` +
        `<h3>dz${sub(I)}: head ${ctx.head + 1}'s block</h3>${vectorList(row(b.dZ, i))}`;
    case 'dv': {
      const a = row(g.weights, i);
      const rows = Array.from({ length: n }, (_, j) => [keyCell(ctx, j), fmt(a[j])]);
      return `<p>dv${sub('j')} = A${sub(`${I}j`)} dz${sub(I)}: each value row gets dz${sub(I)} times the weight token ${I} gave it.</p>` +
        table(['key j', `A${sub(`${I}j`)}`], rows, i) + `<h3>dz${sub(I)}</h3>${vectorList(row(b.dZ, i))}`;
    }
    case 'dA': {
      const da = row(g.dWeights, i);
      const rows = Array.from({ length: n }, (_, j) => [keyCell(ctx, j), fmt(da[j]) + (isMasked(j) ? maskMark : '')]);
      return `<p>dA${sub(`${I}j`)} = dz${sub(I)} · v${sub('j')} for every key j, masked or not:</p>${table(['key j', `dA${sub(`${I}j`)}`], rows, i)}${maskNote}`;
    }
    case 'dS': {
      const a = row(g.weights, i), da = row(g.dWeights, i), ds = row(g.dScores, i);
      let c = 0;
      for (let j = 0; j < n; ++j) c += a[j] * da[j];
      const scale = ctx.scaling ? `1/√${ctx.dK}` : '1';
      const rows = Array.from({ length: n }, (_, j) => [keyCell(ctx, j), fmt(a[j]), fmt(da[j]), fmt(ds[j]) + (isMasked(j) ? maskMark : '')]);
      const sum = Array.from(ds).reduce((x, y) => x + y, 0);
      const only = ctx.causal && i === 0
        ? `<p class="note">With the causal mask token 1 sees only itself: its weight is 1 whatever the scores, so its dS is 0.</p>` : '';
      return `<ol class="recipe"><li>The row's Σ${sub('k')} A${sub(`${I}k`)} dA${sub(`${I}k`)} = ${fmt(c)}: the weighted mean of dA over the row.</li>` +
        `<li>Subtract it from each dA${sub(`${I}j`)}: above the mean, dS is positive; below, negative.</li><li>Multiply by A${sub(`${I}j`)} and by the scale ${scale}: dS${sub(`${I}j`)}.</li></ol>` +
        table(['key j', `A${sub(`${I}j`)}`, `dA${sub(`${I}j`)}`, `dS${sub(`${I}j`)}`], rows, i) +
        `<p class="sum-line">Σ<sub>j</sub> dS${sub(`${I}j`)} = <strong>${fmt(sum)}</strong></p>${maskNote}${only}`;
    }
    case 'dqk':
      return `<h3>dq${sub(I)} = Σ${sub('j')} dS${sub(`${I}j`)} k${sub('j')}</h3>${vectorList(row(g.dq, i))}` +
        `<h3>dk${sub(I)} = dS${sub(`${I}${I}`)} q${sub(I)}, as key</h3>${vectorList(row(g.dk, i))}`;
    case 'dw':
      return `<h3>Row ${I} of dX, ${ctx.dModel} numbers</h3>${vectorList(row(b.layer.dx, i))}` +
        '<p class="hint">The weight gradients have no token rows; hover their cells for values.</p>';
    default:
      return '';
  }
}
