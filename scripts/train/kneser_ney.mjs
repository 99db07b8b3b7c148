// Count-based next-class models with interpolated modified Kneser-Ney smoothing (Chen & Goodman
// 1998, "An empirical study of smoothing techniques for language modeling", section 3), for the
// ceilings of scripts/train/ceilings.mjs: what counting n-grams in the same training text reaches.
//
//   countNgrams(idDocs, V, maxOrder) -> counts: every k-gram (k <= maxOrder) of the documents
//     (none across a document's end), in a trie: node ids by level, raw counts c(g) and
//     continuation counts N1+(•g) (how many distinct tokens precede g)
//   kneserNey(counts, order) -> { order, distribution(context, out) }
//     context (Int32Array or array of class ids, the tokens before the one to predict, the last
//     order−1 of them used), out Float64Array (V) <- p(w | context) for every class w:
//       p_k(w | h) = max(c_k(hw) − D_k(c_k(hw)), 0) / Σ_v c_k(hv)
//                    + γ_k(h) · p_{k−1}(w | h'),   γ_k(h) = Σ_j D_k(j) N_j(h•) / Σ_v c_k(hv)
//     h' = h without its first token; p_0 = 1/V; a history never seen in training (or only at a
//     document's end): p_k = p_{k−1}. c_k: raw counts at the highest order the context allows
//     (min(order, context length + 1)), continuation counts below it. Discounts D_k(1), D_k(2),
//     D_k(3+) from the counts of counts n_1..n_4 of each level and kind:
//       Y = n1 / (n1 + 2 n2), D(1) = 1 − 2Y n2/n1, D(2) = 2 − 3Y n3/n2, D(3+) = 3 − 4Y n4/n3
//     (discounts() below: where some n_j is 0). model.discounts: { raw, cont } [k] -> [D1, D2, D3+]

// Growable Int32Array columns of the trie's nodes.
function column(size) {
  let a = new Int32Array(size);
  return {
    get: (i) => a[i],
    add(i, v) {
      if (i >= a.length) {
        const b = new Int32Array(a.length * 2);
        b.set(a);
        a = b;
      }
      a[i] += v;
    },
    array: () => a,
  };
}

export function countNgrams(idDocs, V, maxOrder) {
  // node 0: the empty history; child key parent·V + w (below 2^53 while nodes·V is)
  const child = new Map();
  const total = idDocs.reduce((a, ids) => a + ids.length, 0);
  const raw = column(total * 2),
    cont = column(total * 2),
    parent = column(total * 2),
    word = column(total * 2),
    level = column(total * 2);
  let nodes = 1;
  const nodeAt = new Int32Array(maxOrder + 1); // nodeAt[j]: the j-gram ending at the current token
  for (const ids of idDocs) {
    for (let i = 0; i < ids.length; ++i) {
      const w = ids[i];
      // longest first, so that nodeAt[j − 1] still is the (j−1)-gram ending at the previous token
      for (let j = Math.min(maxOrder, i + 1); j >= 1; --j) {
        const p = j === 1 ? 0 : nodeAt[j - 1];
        const key = p * V + w;
        let node = child.get(key);
        if (node === undefined) {
          node = nodes++;
          child.set(key, node);
          parent.add(node, p);
          word.add(node, w);
          level.add(node, j);
        }
        raw.add(node, 1);
        nodeAt[j] = node;
      }
      // a j-gram (j >= 2) seen for the first time adds a left context to its suffix, the
      // (j−1)-gram ending here: count each distinct j-gram once
      for (let j = Math.min(maxOrder, i + 1); j >= 2; --j) {
        if (raw.get(nodeAt[j]) === 1) cont.add(nodeAt[j - 1], 1);
      }
    }
  }
  const out = {
    V,
    maxOrder,
    nodes,
    child,
    raw: raw.array().subarray(0, nodes),
    cont: cont.array().subarray(0, nodes),
    word: word.array().subarray(0, nodes),
    level: level.array().subarray(0, nodes),
  };
  // children of each node, contiguous: kids[start[h] .. start[h+1])
  const par = parent.array();
  const start = new Int32Array(nodes + 1);
  for (let i = 1; i < nodes; ++i) ++start[par[i] + 1];
  for (let i = 0; i < nodes; ++i) start[i + 1] += start[i];
  const fill = start.slice(0, nodes);
  const kids = new Int32Array(nodes);
  for (let i = 1; i < nodes; ++i) kids[fill[par[i]]++] = i;
  out.start = start;
  out.kids = kids;
  return out;
}

// counts of counts n_1..n_4 of one level and kind -> [D(1), D(2), D(3+)], each clamped to
// [0, j]; where some n_j is 0 (a level of only frequent n-grams) the formula has no value: then
// D = Y for all (absolute discounting) while n1 and n2 are not 0, else 0.5
export function discounts(n) {
  if (!(n[1] > 0 && n[2] > 0)) return [0.5, 0.5, 0.5];
  const Y = n[1] / (n[1] + 2 * n[2]);
  if (!(n[3] > 0 && n[4] > 0)) return [Y, Y, Y];
  const clamp = (x, j) => Math.min(Math.max(x, 0), j);
  return [
    clamp(1 - (2 * Y * n[2]) / n[1], 1),
    clamp(2 - (3 * Y * n[3]) / n[2], 2),
    clamp(3 - (4 * Y * n[4]) / n[3], 3),
  ];
}

function countsOfCounts(values, level, k) {
  const n = [0, 0, 0, 0, 0];
  for (let i = 1; i < values.length; ++i) if (level[i] === k && values[i] >= 1 && values[i] <= 4) ++n[values[i]];
  return n;
}

export function kneserNey(counts, order) {
  if (order > counts.maxOrder) throw new RangeError(`order ${order} above the counted ${counts.maxOrder}`);
  const { V, child, raw, cont, word, level, start, kids } = counts;
  const D = { raw: [null], cont: [null] };
  for (let k = 1; k <= order; ++k) {
    D.raw.push(discounts(countsOfCounts(raw, level, k)));
    // the highest order has no continuation counts (and never uses them)
    D.cont.push(k < counts.maxOrder ? discounts(countsOfCounts(cont, level, k)) : null);
  }
  // the node of the history context[L−m .. L) (m tokens), or −1 when not seen
  function history(context, m) {
    const L = context.length;
    let node = 0;
    for (let i = L - m; i < L && node >= 0; ++i) node = child.get(node * V + context[i]) ?? -1;
    return node;
  }
  return {
    order,
    discounts: D,
    distribution(context, out) {
      out.fill(1 / V);
      const K = Math.min(order, context.length + 1);
      for (let k = 1; k <= K; ++k) {
        const h = history(context, k - 1);
        if (h < 0) continue;
        const c = k === K ? raw : cont;
        const [d1, d2, d3] = k === K ? D.raw[k] : D.cont[k];
        let sum = 0,
          gamma = 0;
        for (let i = start[h]; i < start[h + 1]; ++i) {
          const n = c[kids[i]];
          sum += n;
          gamma += n === 0 ? 0 : n === 1 ? d1 : n === 2 ? d2 : d3;
        }
        if (sum === 0) continue;
        for (let w = 0; w < V; ++w) out[w] *= gamma / sum;
        for (let i = start[h]; i < start[h + 1]; ++i) {
          const n = c[kids[i]];
          if (n > 0) out[word[kids[i]]] += (n - (n === 1 ? d1 : n === 2 ? d2 : d3)) / sum;
        }
      }
      return out;
    },
  };
}
