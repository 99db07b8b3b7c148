// The worked example: 3 tokens of 2 dimensions, small enough to check every number by hand.
//
//   X (3,2) = [1 0; 0 1; 1 1]     W_Q = I,  W_K = [1 1; 0 1],  W_V = I,  W_O = I   (one head, d_k = 2)
//   Q = X,  K = X·W_K = [1 1; 0 1; 1 2],  V = X
//   QKᵀ (3,3) = [1 0 1; 1 1 2; 2 1 3]
//   with 1/√2 scaling and no mask, row 1 of the weights is [e, 1, e] / (2e + 1), e = exp(1/√2),
//   and row 1 of the output is [2e, 1 + e] / (2e + 1) = [0.80222419, 0.59888791].
// The page computes all of it with the library; the hand values below are shown beside it.
import { tensor } from '../lib/index.js';
import { fmt } from './format.js';

export const WORKED = {
  tokens: ['x\u2081', 'x\u2082', 'x\u2083'],
  x: tensor(new Float32Array([1, 0, 0, 1, 1, 1]), [3, 2]),
  weights: {
    wq: tensor(new Float32Array([1, 0, 0, 1]), [2, 2]),
    wk: tensor(new Float32Array([1, 1, 0, 1]), [2, 2]),
    wv: tensor(new Float32Array([1, 0, 0, 1]), [2, 2]),
    wo: tensor(new Float32Array([1, 0, 0, 1]), [2, 2]),
  },
  heads: 1,
  dK: 2,
};

const e = Math.exp(1 / Math.SQRT2);

// Hand-derived values, valid with scaling on and no causal mask.
export const HAND = {
  scores: [1, 0, 1, 1, 1, 2, 2, 1, 3],
  weightsRow1: [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)],
  outputRow1: [(2 * e) / (2 * e + 1), (1 + e) / (2 * e + 1)],
};

// A short "by hand" note per step id, as HTML; null where there is nothing to add.
export function handNote(stepId, { causal, scaling }) {
  const plain = !causal && scaling;
  const caveat = '<p class="hand-caveat">The hand values here assume scaling on and no causal mask; switch them back to compare.</p>';
  switch (stepId) {
    case 'qkv':
      return '<p><strong>By hand:</strong> Q = X·I = X. K = X·W<sub>K</sub>: row 1 is [1 0]·[1 1; 0 1] = [1 1], row 2 is [0 1]·W<sub>K</sub> = [0 1], row 3 is [1 1]·W<sub>K</sub> = [1 2]. V = X·I = X.</p>';
    case 'scores':
      return '<p><strong>By hand:</strong> entry (i, j) is q<sub>i</sub>·k<sub>j</sub>. Row 1: q<sub>1</sub> = [1 0] against k = [1 1], [0 1], [1 2] gives 1, 0, 1. Row 2: [0 1] gives 1, 1, 2. Row 3: [1 1] gives 2, 1, 3. So QKᵀ = [1 0 1; 1 1 2; 2 1 3].</p>';
    case 'scale':
      return scaling
        ? '<p><strong>By hand:</strong> d<sub>k</sub> = 2, so every score is divided by √2 ≈ 1.4142: row 1 becomes [0.7071, 0, 0.7071].</p>'
        : caveat;
    case 'softmax':
      return plain
        ? `<p><strong>By hand:</strong> row 1 is [1/√2, 0, 1/√2]. With e = exp(1/√2) ≈ ${fmt(e)}, its weights are [e, 1, e] / (2e + 1) = [${HAND.weightsRow1.map((v) => fmt(v)).join(', ')}], which sum to 1.</p>`
        : caveat;
    case 'weighted':
      return plain
        ? `<p><strong>By hand:</strong> output row 1 = w<sub>11</sub>·v<sub>1</sub> + w<sub>12</sub>·v<sub>2</sub> + w<sub>13</sub>·v<sub>3</sub> = (e·[1 0] + 1·[0 1] + e·[1 1]) / (2e + 1) = [2e, 1 + e] / (2e + 1) = [${HAND.outputRow1.map((v) => fmt(v)).join(', ')}].</p>`
        : caveat;
    case 'output':
      return '<p><strong>By hand:</strong> with one head the concatenation is the head\'s output, and W<sub>O</sub> = I leaves it unchanged, so this equals step 7.</p>';
    default:
      return null;
  }
}
