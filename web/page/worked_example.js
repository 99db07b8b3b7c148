// The worked example: 3 tokens of 2 dimensions, small enough to check every number by hand.
//
//   X (3,2) = [1 0; 0 1; 1 1]     W_Q = I,  W_K = [1 1; 0 1],  W_V = I,  W_O = I   (one head, d_k = 2)
//   Q = X,  K = X·W_K = [1 1; 0 1; 1 2],  V = X
//   QKᵀ (3,3) = [1 0 1; 1 1 2; 2 1 3]
//   with 1/√2 scaling and no mask, row 1 of the weights is [e, 1, e] / (2e + 1), e = exp(1/√2),
//   and row 1 of the output is [2e, 1 + e] / (2e + 1) = [0.80222419, 0.59888791].
// Backward, for L = ½‖y₁ − x₂‖² (i = x₁, j = x₂), with a = e / (2e + 1) (= A₁₁ = A₁₃):
//   dY row 1 = y₁ − x₂ = a·[2, −1];  dA row 1 = [2a, −a, a];  dS row 1 = A₁ⱼ(dA₁ⱼ − Σ A dA)/√2
//   dq₁ = Σⱼ dS₁ⱼ kⱼ;  dkⱼ = dS₁ⱼ q₁;  dW_Q = x₁ᵀ dq₁;  dW_O = y₁ᵀ dY₁
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

// The backward pass by hand, for i = x₁ and j = x₂ (scaling on, no mask).
const a1 = HAND.weightsRow1[0], a2 = HAND.weightsRow1[1];
const g = [HAND.outputRow1[0] - 0, HAND.outputRow1[1] - 1];      // y₁ − x₂
const dA = [g[0], g[1], g[0] + g[1]];                             // g · vⱼ, v = [1 0], [0 1], [1 1]
const meanDA = HAND.weightsRow1.reduce((s, w, j) => s + w * dA[j], 0);
const dS = HAND.weightsRow1.map((w, j) => (w * (dA[j] - meanDA)) / Math.SQRT2);
const dQ = [dS[0] + dS[2], dS[0] + dS[1] + 2 * dS[2]];           // k = [1 1], [0 1], [1 2]
export const HAND_BACK = {
  dOutputRow1: g,
  loss: 0.5 * (g[0] ** 2 + g[1] ** 2),
  dVRows: HAND.weightsRow1.map((w) => [w * g[0], w * g[1]]),
  dARow1: dA,
  meanDA,
  dSRow1: dS,
  dQRow1: dQ,
  dKCol1: dS,                                                     // dkⱼ = dS₁ⱼ·[1 0]
  dWQ: [dQ[0], dQ[1], 0, 0],                                      // x₁ᵀ dq₁, x₁ = [1 0]
  dWO: HAND.outputRow1.flatMap((y) => g.map((d) => y * d)),       // y₁ᵀ dY₁ (C = Z = Y here)
};

const vec = (xs) => `[${xs.map((x) => fmt(x)).join(', ')}]`;

// A short "by hand" note per step id, as HTML; null where there is nothing to add.
export function handNote(stepId, { causal, scaling, back }) {
  const plain = !causal && scaling;
  const caveat = '<p class="hand-caveat">The hand values here assume scaling on and no causal mask; switch them back to compare.</p>';
  const backPlain = plain && back?.query === 0 && back?.target === 1;
  const backCaveat = '<p class="hand-caveat">The hand values here assume scaling on, no causal mask, i = x₁ and j = x₂; switch them back to compare.</p>';
  const H = HAND_BACK;
  switch (stepId) {
    case 'loss':
      return backPlain
        ? `<p><strong>By hand:</strong> y₁ = ${vec(HAND.outputRow1)} (step 11) and x₂ = [0, 1], so row 1 of dY is y₁ − x₂ = ${vec(H.dOutputRow1)}, and L = ½(${fmt(g[0])}² + ${fmt(-g[1])}²) = ${fmt(H.loss)}. Rows 2 and 3 of dY are 0.</p>`
        : backCaveat;
    case 'dhead':
      return backPlain
        ? `<p><strong>By hand:</strong> one head and W<sub>O</sub> = I, so dZ = dC = dY·I = dY: row 1 is ${vec(H.dOutputRow1)}, the other rows 0.</p>`
        : backCaveat;
    case 'dv':
      return backPlain
        ? `<p><strong>By hand:</strong> dv<sub>j</sub> = A<sub>1j</sub> dz<sub>1</sub>, with A<sub>1</sub> = ${vec(HAND.weightsRow1)}: dv<sub>1</sub> = dv<sub>3</sub> = ${fmt(a1)}·${vec(g)} = ${vec(H.dVRows[0])} and dv<sub>2</sub> = ${fmt(a2)}·${vec(g)} = ${vec(H.dVRows[1])}.</p>`
        : backCaveat;
    case 'dA':
      return backPlain
        ? `<p><strong>By hand:</strong> dA<sub>1j</sub> = dz<sub>1</sub> · v<sub>j</sub> with v<sub>1</sub> = [1 0], v<sub>2</sub> = [0 1], v<sub>3</sub> = [1 1]: ${fmt(dA[0])}, ${fmt(dA[1])} and ${fmt(g[0])} − ${fmt(-g[1])} = ${fmt(dA[2])}.</p>`
        : backCaveat;
    case 'dS':
      return backPlain
        ? `<p><strong>By hand:</strong> Σ<sub>k</sub> A<sub>1k</sub> dA<sub>1k</sub> = ${fmt(a1)}·${fmt(dA[0])} + ${fmt(a2)}·(${fmt(dA[1])}) + ${fmt(a1)}·${fmt(dA[2])} = ${fmt(meanDA)}. Then dS<sub>1j</sub> = A<sub>1j</sub>(dA<sub>1j</sub> − ${fmt(meanDA)})/√2 = ${vec(dS)}, which sums to 0.</p>`
        : backCaveat;
    case 'dqk':
      return backPlain
        ? `<p><strong>By hand:</strong> dq<sub>1</sub> = dS<sub>11</sub>k<sub>1</sub> + dS<sub>12</sub>k<sub>2</sub> + dS<sub>13</sub>k<sub>3</sub> with k = [1 1], [0 1], [1 2]: ${vec(dQ)}. q<sub>1</sub> = [1 0], so dk<sub>j</sub> = dS<sub>1j</sub>·[1 0]: the first column of dK is ${vec(dS)}, the second 0.</p>`
        : backCaveat;
    case 'dw':
      return backPlain
        ? `<p><strong>By hand:</strong> only token 1 has a gradient, so dW<sub>Q</sub> = x<sub>1</sub><sup>T</sup>dq<sub>1</sub> = [${fmt(dQ[0])} ${fmt(dQ[1])}; 0 0] (x<sub>1</sub> = [1 0]), and dW<sub>O</sub> = c<sub>1</sub><sup>T</sup>dY<sub>1</sub> with c<sub>1</sub> = y<sub>1</sub> here: [${fmt(H.dWO[0])} ${fmt(H.dWO[1])}; ${fmt(H.dWO[2])} ${fmt(H.dWO[3])}].</p>`
        : backCaveat;
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
