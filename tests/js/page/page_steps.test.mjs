// The tutorial page's steps and state without a browser: every step is one complete descriptor
// (web/page/steps/), and the rules the state follows (web/page/state.js, web/page/input.js),
// run on the package in Node.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { createAttention } from '../../../web/lib/index.js';
import { prepareInput } from '../../../web/page/input.js';
import { MAX_TOKENS } from '../../../web/page/limits.js';
import { UNTRAINED, change, createState, effectiveDK, goTo, isRow, recompute } from '../../../web/page/state.js';
import { STEPS } from '../../../web/page/steps/index.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { loadShippedModel } from '../helpers/shipped_model.mjs';

const SENTENCE = "The animal didn't cross the street because it was too tired.";
const IDS = [
  'x',
  'qkv',
  'scores',
  'scale',
  'mask',
  'softmax',
  'weighted',
  'heads',
  'concat',
  'wo',
  'output',
  'loss',
  'dhead',
  'dv',
  'dA',
  'dS',
  'dqk',
  'dw',
];

let attn;
const model = loadShippedModel();
before(async () => {
  attn = await createAttention({ threads: 1 });
});

// A state as the page has it after loading and choosing Identity weights (the page opens on the
// trained model), with the settings patched.
function loaded(patch = {}) {
  const state = createState(SENTENCE);
  Object.assign(state, { attn, model });
  change(state, { projection: 'identity' });
  Object.assign(state.settings, patch);
  recompute(state);
  return state;
}

describe('step descriptors', () => {
  test('eighteen steps in order, each with a part, a pill label, a view and a side panel', () => {
    assert.deepEqual(
      STEPS.map((s) => s.id),
      IDS,
    );
    assert.deepEqual(
      STEPS.map((s) => s.part),
      [...Array(7).fill('one'), ...Array(4).fill('all'), ...Array(7).fill('back')],
    );
    assert.deepEqual(
      STEPS.map((s) => s.label),
      [
        'X',
        'Q K V',
        'QKᵀ',
        '÷√d',
        'mask',
        'softmax',
        'AV',
        'heads',
        'concat',
        'W_O',
        'out',
        'loss',
        'dZ',
        'dV',
        'dA',
        'dS',
        'dQ dK',
        'dW',
      ],
    );
    assert.deepEqual(
      STEPS.filter((s) => s.part === 'back').map((s) => s.scope),
      ['layer', 'head', 'head', 'head', 'head', 'head', 'layer'],
    );
    for (const s of STEPS) {
      assert.equal(typeof s.view, 'function', `${s.id}.view`);
      assert.equal(typeof s.inspect, 'function', `${s.id}.inspect`);
      assert.equal(
        s.source === null,
        s.timing === undefined,
        `${s.id}: a library source names the call it is timed by`,
      );
    }
    assert.deepEqual(
      STEPS.filter((s) => s.sgd).map((s) => s.id),
      ['dw'],
    );
  });

  for (const [what, patch] of [
    ['a sentence, 4 heads, causal', { causal: true }],
    ['the worked example', { mode: 'worked' }],
  ]) {
    test(`${what}: every step's view, side panel and timed call`, () => {
      const { ctx, steps } = loaded(patch);
      assert.equal(steps.length, IDS.length);
      for (const step of steps) {
        assert.ok(step.title && step.formulaHtml && step.explainHtml, `${step.id}: title, formula, prose`);
        assert.ok(step.shapes.length > 0 && step.matrices.length > 0, `${step.id}: shapes and matrices`);
        for (const m of step.matrices)
          assert.equal(m.data.length, m.shape[0] * m.shape[1], `${step.id}: ${m.name} ${m.shape}`);
        for (let i = 0; i < ctx.n; ++i)
          assert.match(step.inspect(ctx, i), /<(p|h3|ol)\b/, `${step.id}: panel of row ${i}`);
        if (step.sourceHtml) continue;
        const timings = step.part === 'back' ? ctx.back.timings : ctx.result.timings;
        assert.ok(
          timings.some((t) => t.call === step.timing),
          `${step.id}: ${step.timing} is among the calls the pass made`,
        );
      }
    });
  }

  test("the worked example's hand values, and a caveat once the settings differ from them", () => {
    const withHand = (state) => state.steps.filter((s) => s.hand).map((s) => [s.id, s.hand(state.ctx)]);
    const plain = withHand(loaded({ mode: 'worked', focus: 0, target: 1 }));
    assert.deepEqual(
      plain.map(([id]) => id),
      ['qkv', 'scores', 'scale', 'softmax', 'weighted', 'output', 'loss', 'dhead', 'dv', 'dA', 'dS', 'dqk', 'dw'],
    );
    for (const [id, html] of plain) assert.match(html, /^<p><strong>By hand:<\/strong> /, id);
    assert.match(Object.fromEntries(plain).softmax, /\[0\.4011, 0\.1978, 0\.4011\]/);
    const causal = Object.fromEntries(withHand(loaded({ mode: 'worked', focus: 0, target: 1, causal: true })));
    for (const id of ['softmax', 'weighted', 'loss', 'dS', 'dw']) assert.match(causal[id], /hand-caveat/, id);
    assert.match(causal.scores, /By hand/); // the scores do not depend on the mask
  });

  test('the prose names other steps by their places in the step list', () => {
    const at = (id) => IDS.indexOf(id) + 1; // the list the first test holds STEPS to
    const byId = (state) => Object.fromEntries(state.steps.map((s) => [s.id, s]));
    const sentence = byId(loaded({ causal: true }));
    assert.match(sentence.qkv.explainHtml, new RegExp(`Steps ${at('qkv')} to ${at('weighted')} follow head 1 of 4`));
    assert.match(sentence.scale.explainHtml, new RegExp(`watch step ${at('softmax')} saturate`));
    assert.match(sentence.heads.explainHtml, new RegExp(`the one steps ${at('qkv')} to ${at('weighted')} followed`));
    assert.match(
      sentence.loss.explainHtml,
      new RegExp(`Steps ${at('dhead')} to ${at('dqk')} carry it back .*; step ${at('dw')} shows`),
    );
    assert.match(sentence.loss.sourceHtml, new RegExp(`row i of the output \\(step ${at('output')},`));
    assert.match(sentence.dhead.explainHtml, new RegExp(`columns \\(step ${at('concat')}\\)`));
    assert.match(
      sentence.dS.explainHtml,
      new RegExp(`of step ${at('scale')} multiplies too.* of step ${at('scores')}\\.`),
    );
    const worked = loaded({ mode: 'worked', focus: 0, target: 1 });
    const one = byId(worked);
    assert.match(one.heads.explainHtml, new RegExp(`so this grid is step ${at('softmax')}'s A again`));
    assert.match(one.output.hand(worked.ctx), new RegExp(`this equals step ${at('weighted')}\\.`));
  });
});

describe('page state', () => {
  test('a sentence: " it" is followed, the first token of a word of 4 letters is the target, X is the model\'s token embeddings', () => {
    const { ctx, settings, input } = loaded();
    const tokens = tokenize(SENTENCE, model.tokenizer);
    assert.equal(ctx.n, tokens.length);
    assert.equal(ctx.dModel, model.dim);
    assert.equal(input.labels[settings.focus], '\u2423it');
    // the target starts a word (" an" of " an|im|al"), never a piece inside one
    const j = ctx.back.target;
    assert.ok(j === 0 || /^\s/u.test(tokens[j].text), `target ${JSON.stringify(tokens[j].text)}`);
    let word = tokens[j].text.trim();
    for (let m = j + 1; m < tokens.length && /^\p{L}+$/u.test(tokens[m].text); ++m) word += tokens[m].text;
    assert.match(word, /^\p{L}{4,}$/u, `target's word ${JSON.stringify(word)}`);
    const d = model.dim,
      id = tokens[1].id;
    assert.deepEqual(
      Array.from(ctx.x.data.subarray(d, 2 * d)),
      Array.from(model.tensors.embed.data.subarray(id * d, (id + 1) * d)),
    );
  });

  test('a new text: the followed token is found again by its text, or reset', () => {
    const state = loaded();
    const label = () => state.input.labels[state.settings.focus];
    // follow " street", then put words before it: still " street"
    state.settings.focus = state.input.tokens.findIndex((t) => t.text === ' the');
    change(state, { text: `Yesterday, sadly, ${SENTENCE}` });
    recompute(state);
    assert.equal(label(), '\u2423the');
    assert.equal(state.input.tokens.slice(0, state.settings.focus).filter((t) => t.text === ' the').length, 0);
    // the second " the" followed, a text with one: the last there is
    state.settings.focus = state.input.tokens.findLastIndex((t) => t.text === ' the');
    change(state, { text: 'It was the end.' });
    recompute(state);
    assert.equal(label(), '\u2423the');
    // a text without it: the default (" it", else the first token)
    change(state, { text: 'Nothing here is it.' });
    recompute(state);
    assert.equal(label(), '\u2423it');
    change(state, { text: 'No such word.' });
    recompute(state);
    assert.equal(state.settings.focus, 0);
  });

  test('d_k follows d_model / heads until it is typed', () => {
    const state = loaded({ projection: 'random' });
    assert.equal(effectiveDK(state), model.dim / 4);
    assert.equal(change(state, { heads: 5 }), true);
    assert.equal(effectiveDK(state), model.dim / 5);
    change(state, { dK: 8 });
    change(state, { heads: 2 });
    assert.equal(effectiveDK(state), 8);
    change(state, { projection: 'identity' });
    assert.equal(effectiveDK(state), model.dim / 2);
  });

  test('a patch that changes nothing is no action; a new input forgets the target', () => {
    const state = loaded();
    assert.equal(change(state, { heads: 4, causal: false }), false);
    state.settings.target = 3;
    change(state, { text: 'Another sentence here.' });
    assert.equal(state.settings.target, null);
    change(state, { mode: 'worked' });
    assert.deepEqual([state.settings.focus, state.settings.target], [0, null]);
    change(state, { mode: 'sentence' });
    assert.equal(state.settings.focus, null); // "it" again, once recomputed
  });

  test('Trained is the default; it fixes heads, d_k, mask, scale and positions, and gives them back', () => {
    const state = createState(SENTENCE);
    const fixed = { heads: 4, dK: null, causal: true, scaling: true, positions: true };
    const pick = (s) => Object.fromEntries(Object.keys(UNTRAINED).map((k) => [k, s[k]]));
    assert.equal(state.settings.projection, 'trained');
    assert.deepEqual(pick(state.settings), fixed);
    // Leaving it gives the other presets' defaults; what is set there comes back after Trained.
    assert.equal(change(state, { projection: 'identity' }), true);
    assert.deepEqual(pick(state.settings), UNTRAINED);
    assert.deepEqual(UNTRAINED, { heads: 4, dK: null, causal: false, scaling: true, positions: false });
    change(state, { projection: 'random', heads: 2, dK: 8, scaling: false });
    change(state, { causal: true });
    const mine = { heads: 2, dK: 8, causal: true, scaling: false, positions: false };
    assert.deepEqual(pick(state.settings), mine);
    change(state, { projection: 'trained' });
    assert.deepEqual(pick(state.settings), fixed);
    change(state, { layer: 1, head: 3 });
    assert.deepEqual(pick(state.settings), fixed, 'moving in the trained model keeps it fixed');
    change(state, { projection: 'random' });
    assert.deepEqual(pick(state.settings), mine);
    // The worked example is never the trained model: it gets the same settings back.
    change(state, { projection: 'trained' });
    change(state, { mode: 'worked' });
    assert.deepEqual(pick(state.settings), mine);
    assert.equal(state.settings.projection, 'trained');
    change(state, { mode: 'sentence' });
    assert.deepEqual(pick(state.settings), fixed);
  });

  test('steps and rows stay in range', () => {
    const state = loaded();
    assert.equal(goTo(state, -3), false);
    assert.equal(goTo(state, 99), true);
    assert.equal(state.settings.step, IDS.length - 1);
    assert.deepEqual(
      [isRow(state, 0), isRow(state, state.ctx.n - 1), isRow(state, state.ctx.n), isRow(state, 1.5), isRow(state, -1)],
      [true, true, false, false, false],
    );
  });

  test(`input: at most ${MAX_TOKENS} tokens, X = E + P with positions, nothing for no tokens`, () => {
    const text = 'word '.repeat(MAX_TOKENS + 4);
    const long = prepareInput({ mode: 'sentence', text, positions: true }, model);
    assert.equal(long.truncatedFrom, tokenize(text, model.tokenizer).length);
    assert.ok(long.truncatedFrom > MAX_TOKENS);
    assert.deepEqual(long.x.shape, [MAX_TOKENS, model.dim]);
    for (const k of [0, 1, 4321, long.x.data.length - 1])
      assert.equal(long.x.data[k], Math.fround(long.e.data[k] + long.p.data[k]));
    assert.equal(prepareInput({ mode: 'sentence', text: '' }, model), null);
    // whitespace is text too: the tokenizer gives it tokens
    assert.equal(prepareInput({ mode: 'sentence', text: ' \n ' }, model).labels.join(''), '\u2423\u21b5\u2423');
  });
});
