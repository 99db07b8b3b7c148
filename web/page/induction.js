// The trained model's induction head on the learner's sentence, in words and numbers: which head
// it is (the manifest's induction scores), the previous-word head of layer 1 it composes with,
// and what both did on this sentence; plus the layer-1 heads that park their weight on the first
// word (an attention sink). Everything from measurements: the manifest's held-out figures and the
// weights the library computed for this sentence.
//
//   keyHeads(manifest, named) -> { induction: { layer, head, score, named }, previous: { layer,
//     head, share } }: the induction head, `named` ({ layer, head }: the one whose knock-out removes
//     most of the copy on the text, ablation.js headEffects) when given, else the head with the
//     largest induction score (named false); its score is the manifest's. And layer 1's head with
//     the largest share on the previous word
//   namedHead(ctx) -> the first of ctx.trained.inductionHeads() (state.js), or undefined
//   copyAt(norms, i) -> the latest j < i with norms[j] = norms[i] and j + 1 < i, or −1
//   copyToken(norms, focus, weightAfter) -> the token the explanation is about: focus when it
//     repeats an earlier word; else, of the words that do with a word after their earlier
//     occurrence, the one whose weightAfter(i, earlier + 1) (the induction head's weight there) is
//     largest; else the last token that repeats; −1 when none does
//   composition(ctx, focus) -> null without the trained model; else { token, earlier, after,
//     previous: { head, at, on, weight }, induction: { head, weight, top, topWeight }, guess: { word, p } }
//     token i, its earlier occurrence `earlier` and the word after it `after` = earlier + 1;
//     previous: of layer 1's heads, the one with the most weight from `after` on the word before
//     (the previous-word head, or another that does its job on this sentence): its row `after`
//     (on: its largest weight's column);
//     induction: the induction head's weight from i on `after`, and its largest (top);
//     guess: the model's most likely next token after token i
//   compositionHtml(ctx, focus) -> a paragraph: those numbers, or how to see them
//   inductionStepHtml(ctx) -> the softmax step's note when the steps show the induction head: its
//     shifted diagonal on a repeated sentence (the sentence's own induction score) and
//     compositionHtml for the last repeated word; '' for any other head
//   sinkSentence(manifest) -> the sentence about the layer-1 heads with >= SINK of their weight
//     on the first word (an attention sink), or that none has, with the largest share
import { esc, quote } from './format.js';
import { pieceLabel } from './tokenize.js';
import { INDUCTION_HEAD, inductionScore, repeatedSpan } from './model/head_stats.js';

export const SINK = 0.9;
const pct = (x) => `${Math.round(100 * x)} %`;
const word = (ctx, j) => `${quote(esc(ctx.labels[j]))} (word ${j + 1})`;
const headName = ({ layer, head }) => `Layer ${layer + 1} head ${head + 1}`;

export function keyHeads(manifest, named = undefined) {
  const heads = manifest.heads;
  const best = (list, key) => list.reduce((a, b) => ((b[key] ?? -1) > (a[key] ?? -1) ? b : a));
  const ind = named ? heads.find((h) => h.layer === named.layer && h.head === named.head) : best(heads, 'induction');
  const prev = best(
    heads.filter((h) => h.layer === 0),
    'prev',
  );
  return {
    induction: { layer: ind.layer, head: ind.head, score: ind.induction ?? 0, named: Boolean(named) },
    previous: { layer: prev.layer, head: prev.head, share: prev.prev },
  };
}

export const namedHead = (ctx) => ctx.trained.inductionHeads?.()[0];

export function copyAt(norms, i) {
  for (let j = i - 2; j >= 0; --j) if (norms[j] === norms[i]) return j;
  return -1;
}

const isWord = (w) => /[\p{L}\p{N}]/u.test(w);

export function copyToken(norms, focus, weightAfter = () => 0) {
  if (focus >= 0 && focus < norms.length && copyAt(norms, focus) >= 0) return focus;
  let best = -1,
    bestWord = -1;
  for (let i = norms.length - 1; i >= 0; --i) {
    const j = copyAt(norms, i);
    if (j < 0) continue;
    if (best < 0) best = i;
    if (
      isWord(norms[i]) &&
      isWord(norms[j + 1]) &&
      (bestWord < 0 || weightAfter(i, j + 1) > weightAfter(bestWord, copyAt(norms, bestWord) + 1))
    )
      bestWord = i;
  }
  return bestWord >= 0 ? bestWord : best;
}

const argmax = (row) => row.reduce((best, v, j) => (v > row[best] ? j : best), 0);

export function composition(ctx, focus) {
  if (!ctx?.trained || !ctx.norms) return null;
  const { induction, previous } = keyHeads(ctx.trained.manifest, namedHead(ctx));
  const n = ctx.n;
  const rowOf = ({ layer, head }, r) => ctx.trained.heads[layer][head].data.subarray(r * n, (r + 1) * n);
  const i = copyToken(ctx.norms, focus, (r, c) => rowOf(induction, r)[c]);
  if (i < 0) return { token: -1, induction, previous };
  const earlier = copyAt(ctx.norms, i);
  const after = earlier + 1;
  // on this sentence, the layer-1 head that puts the most weight from `after` on the word before
  // (the manifest's previous-word head where it does the job here)
  const layer1 = ctx.trained.heads[0].map((_, head) => ({ layer: 0, head }));
  const here = layer1.reduce((a, b) => (rowOf(b, after)[after - 1] > rowOf(a, after)[after - 1] ? b : a), previous);
  const prevRow = rowOf(here, after);
  const indRow = rowOf(induction, i);
  const top = argmax(indRow);
  const guess = ctx.trained.predictions[i];
  return {
    token: i,
    earlier,
    after,
    previous: { head: here, at: after, on: argmax(prevRow), weight: prevRow[after - 1] },
    induction: { head: induction, weight: indRow[after], top, topWeight: indRow[top] },
    guess: { word: guess[0].word, p: guess[0].p },
  };
}

export function compositionHtml(ctx, focus) {
  const c = composition(ctx, focus);
  if (!c) return '';
  const { induction, previous } = keyHeads(ctx.trained.manifest, namedHead(ctx));
  const heads =
    `<strong>${headName(induction)}</strong> is the model's induction head${induction.named ? ' on your text: knocking it out removes the most of the copy (the table above)' : ''}; its induction score on held-out repeats of random words is ${induction.score.toFixed(2)}${induction.score >= INDUCTION_HEAD ? '' : ', a weak one'}. ` +
    `<strong>${headName(previous)}</strong> is the previous-word head it builds on (${pct(previous.share)} of its weight on the previous word).`;
  if (c.token < 0)
    return `<p>${heads} Your sentence repeats no word, so there is nothing to copy: press <em>Repeat</em> and choose the induction head to see it work.</p>`;
  const { previous: p, induction: h, guess } = c;
  const named = p.head.head === previous.head ? 'the previous-word head' : `${headName(p.head).toLowerCase()}`;
  const carries =
    p.on === p.at - 1
      ? `: that word's vector now carries “${esc(ctx.labels[p.at - 1])} came before me”`
      : ', so the word before it reaches that word only in part';
  const prevSays =
    p.on === p.at - 1
      ? `${named} puts ${pct(p.weight)} of its weight on the word before it, ${word(ctx, p.at - 1)}${carries}`
      : `${named} puts ${pct(p.weight)} of its weight on the word before it, ${word(ctx, p.at - 1)} (most on ${word(ctx, p.on)})${carries}`;
  const looked =
    h.top === c.after
      ? `puts ${pct(h.weight)} of its weight on ${word(ctx, c.after)}, the word that followed ${quote(esc(ctx.labels[c.token]))} last time`
      : `puts ${pct(h.weight)} of its weight on ${word(ctx, c.after)}, the word that followed ${quote(esc(ctx.labels[c.token]))} last time, and most (${pct(h.topWeight)}) on ${word(ctx, h.top)}`;
  // every token is one of the model's output classes: the copy is the token itself
  const copied = ctx.norms[c.after];
  const guessed = guess.word !== copied ? `not ${quote(esc(ctx.labels[c.after]))}` : 'the token it copied';
  return (
    `<p>${heads}</p><p>On your sentence, ${word(ctx, c.token)} appeared before as ${word(ctx, c.earlier)}. ` +
    `In layer 1, at ${word(ctx, c.after)}, ${prevSays}. ` +
    `In layer 2, at ${word(ctx, c.token)}, the induction head's query matches that key: it ${looked}. ` +
    `The model's most likely next word after ${word(ctx, c.token)} is ${quote(esc(pieceLabel(guess.word)))} (${pct(guess.p)}), ${guessed}.</p>`
  );
}

export function sinkSentence(manifest) {
  const layer1 = manifest.heads.filter((h) => h.layer === 0);
  const sinks = layer1.filter((h) => h.first >= SINK);
  if (!sinks.length) {
    const most = layer1.reduce((a, b) => (b.first > a.first ? b : a));
    return `No head of layer 1 parks its weight on the first word, measured on held-out text (an attention sink: the most is head ${most.head + 1}, ${pct(most.first)}).`;
  }
  const names = sinks.map((h) => `head ${h.head + 1} (${pct(h.first)})`);
  const list = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : names[0];
  return `Layer 1's ${list} put${sinks.length > 1 ? '' : 's'} nearly all ${sinks.length > 1 ? 'their' : 'its'} weight on the first word, measured on held-out text: an attention sink, where a head parks its weight when it has nothing to look for (softmax weights must sum to 1).`;
}

export function inductionStepHtml(ctx) {
  if (!ctx?.trained || !ctx.norms) return '';
  const { induction } = keyHeads(ctx.trained.manifest, namedHead(ctx));
  if (ctx.layer !== induction.layer || ctx.head !== induction.head) return '';
  const r = repeatedSpan(ctx.norms);
  const intro = `<p><strong>This is the induction head.</strong> Word i of a repeated text looks at the word that came right after the earlier occurrence of word i, and the model copies it as its guess for what comes next.</p>`;
  if (!r)
    return `${intro}<p>Your sentence is not one text twice: press <em>Repeat</em> above to see its weights form a diagonal.</p>${compositionHtml(ctx, -1)}`;
  const { start, span, again } = r;
  const score = inductionScore(ctx.trained.heads[ctx.layer][ctx.head].data, ctx.n, span, start, again);
  const same =
    start === 0 && again === span
      ? `${span} tokens twice`
      : `one text twice: tokens ${start + 1} to ${start + span} come again as tokens ${again + 1} to ${again + span}`;
  return (
    `${intro}<p>Your sentence is ${same}. In the second copy, row ${again} + k looks at column ${start} + k + 1 (k = 1 to ${span}): a diagonal from (row ${again + 1}, column ${start + 2}) to (row ${again + span}, column ${start + span + 1}), ` +
    `shifted one column right of each word's earlier occurrence. The mean weight on it is ${pct(score)}: the head's induction score on your sentence.</p>` +
    compositionHtml(ctx, -1)
  );
}
