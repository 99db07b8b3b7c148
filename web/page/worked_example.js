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
// The page computes all of it with the library; each step's `hand` (steps/forward.js,
// steps/backward.js) shows these values beside it, through byHand and byHandBack below.
import { tensor } from '../lib/index.js';

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
  e, // exp(1/√2)
  scores: [1, 0, 1, 1, 1, 2, 2, 1, 3],
  weightsRow1: [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)],
  outputRow1: [(2 * e) / (2 * e + 1), (1 + e) / (2 * e + 1)],
};

// The backward pass by hand, for i = x₁ and j = x₂ (scaling on, no mask).
const g = [HAND.outputRow1[0] - 0, HAND.outputRow1[1] - 1]; // y₁ − x₂
const dA = [g[0], g[1], g[0] + g[1]]; // g · vⱼ, v = [1 0], [0 1], [1 1]
const meanDA = HAND.weightsRow1.reduce((s, w, j) => s + w * dA[j], 0);
const dS = HAND.weightsRow1.map((w, j) => (w * (dA[j] - meanDA)) / Math.SQRT2);
const dQ = [dS[0] + dS[2], dS[0] + dS[1] + 2 * dS[2]]; // k = [1 1], [0 1], [1 2]
export const HAND_BACK = {
  dOutputRow1: g,
  loss: 0.5 * (g[0] ** 2 + g[1] ** 2),
  dVRows: HAND.weightsRow1.map((w) => [w * g[0], w * g[1]]),
  dARow1: dA,
  meanDA,
  dSRow1: dS,
  dQRow1: dQ,
  dKCol1: dS, // dkⱼ = dS₁ⱼ·[1 0]
  dWQ: [dQ[0], dQ[1], 0, 0], // x₁ᵀ dq₁, x₁ = [1 0]
  dWO: HAND.outputRow1.flatMap((y) => g.map((d) => y * d)), // y₁ᵀ dY₁ (C = Z = Y here)
};

// The hand values hold with scaling on and no causal mask; the backward ones also need i = x₁, j = x₂.
export const handHolds = ({ causal, scaling }) => !causal && scaling;
const handBackHolds = (ctx) => handHolds(ctx) && ctx.back?.query === 0 && ctx.back?.target === 1;

export const HAND_CAVEAT =
  '<p class="hand-caveat">The hand values here assume scaling on and no causal mask; switch them back to compare.</p>';
const HAND_BACK_CAVEAT =
  '<p class="hand-caveat">The hand values here assume scaling on, no causal mask, i = x₁ and j = x₂; switch them back to compare.</p>';

// A step's "by hand" note, as HTML.
export const byHand = (html) => `<p><strong>By hand:</strong> ${html}</p>`;
// A backward step's note, or the caveat where the settings differ from the hand calculation's.
export const byHandBack = (ctx, html) => (handBackHolds(ctx) ? byHand(html) : HAND_BACK_CAVEAT);
