// What each attention head does, measured on its causal weights, and the sentence the page shows.
//
//   headStats(weightsList, n) -> { prev, self, first, meanDistance, entropyBits }
//     weightsList: [(n,n) Float32Array] row i = query i's weights over keys 0..i. Averaged over
//     every query i >= 2 of every sequence (from 2 on, previous, self and first are three tokens):
//       prev = w[i][i−1], self = w[i][i], first = w[i][0], meanDistance = Σ_j w[i][j]·(i−j),
//       entropyBits = −Σ_j w[i][j]·log2 w[i][j]
//   inductionScore(w, n, span, start = 0, again = start + span) -> the induction score of one head
//     on a sequence whose tokens start..start+span−1 come again at again..again+span−1
//     (TransformerLens' definition, where again = start + span): the mean over k = 0..span−1 of
//     w[again+k][start+k+1], the weight on the token right after the earlier occurrence; w (n,n)
//     as above
//   repeatedSpan(norms) -> { start, span, again } when norms is one text twice: its tokens
//     start..start+span−1 are its last span tokens (again = norms.length − span), span >= 2; the
//     tokens before start and those between the copies (the two copies' first word: "The" at the
//     start of a text is "T|h|e", after the joining space " The") are the same word when the
//     norms are strings, none when they are ids; the largest span; else null
//   repeatedSentence(norms, n, pieces = norms) -> norms when they are a text twice as ids (start
//     0, again = span) that fits in n tokens; else, when pieces (each norm's piece) are a text
//     twice, its second copy twice if that fits; else the first n/2 (at most) twice: the sequence
//     live training measures its induction score on
//   describeHead(stats) -> a sentence from those numbers, never a hand-written claim: the largest
//     of the three shares when it is at least 50 % (and the next one); else, for a sharp head
//     (entropy under 1 bit), that it looks at one word at a time, how far back on average, and the
//     largest share when it is at least 25 %; else that largest share when at least 25 %; else
//     how far back and how spread out it looks. With stats.induction (the manifest's induction
//     score), the score follows; from 0.4 on the sentence starts with "induction head on repeated
//     random words" and says that the shares were measured on held-out text (two measurements:
//     a head can copy on repeats and look at the word itself on ordinary text)
export function headStats(weightsList, n) {
  const sum = { prev: 0, self: 0, first: 0, meanDistance: 0, entropyBits: 0 };
  let count = 0;
  for (const w of weightsList) {
    for (let i = 2; i < n; ++i) {
      const o = i * n;
      sum.prev += w[o + i - 1];
      sum.self += w[o + i];
      sum.first += w[o];
      for (let j = 0; j <= i; ++j) {
        const p = w[o + j];
        sum.meanDistance += p * (i - j);
        if (p > 0) sum.entropyBits -= p * Math.log2(p);
      }
      ++count;
    }
  }
  return Object.fromEntries(Object.entries(sum).map(([k, v]) => [k, v / count]));
}

export function inductionScore(w, n, span, start = 0, again = start + span) {
  let sum = 0;
  for (let k = 0; k < span; ++k) sum += w[(again + k) * n + start + k + 1];
  return sum / span;
}

// the tokens a and b are one word, told apart only by a leading space (strings), or none (ids)
function sameWord(a, b) {
  if (!a.length && !b.length) return true;
  if (![...a, ...b].every((x) => typeof x === 'string')) return false;
  return a.join('').trim() === b.join('').trim() && a.join('').trim() !== '';
}

export function repeatedSpan(norms) {
  const N = norms.length;
  // p tokens before the first copy's span, q between the copies: N = p + q + 2·span
  for (let extra = 0; extra <= N - 4; ++extra)
    for (let p = 0; p <= extra; ++p) {
      const q = extra - p,
        span = (N - extra) / 2;
      if (!Number.isInteger(span) || span < 2) continue;
      const again = N - span;
      let same = true;
      for (let k = 0; k < span && same; ++k) same = norms[p + k] === norms[again + k];
      if (same && sameWord(norms.slice(0, p), norms.slice(p + span, p + span + q))) return { start: p, span, again };
    }
  return null;
}

export function repeatedSentence(norms, n, pieces = norms) {
  const exact = repeatedSpan(norms);
  if (exact && exact.start === 0 && exact.again === exact.span && norms.length <= n) return norms;
  const r = repeatedSpan(pieces);
  const second = r ? norms.slice(r.start + r.span) : [];
  if (r && 2 * second.length <= n) return [...second, ...second];
  const first = norms.slice(0, Math.floor(n / 2));
  return [...first, ...first];
}

export const INDUCTION_HEAD = 0.4; // an induction score from which the page calls a head one

const pct = (x) => `${Math.round(100 * x)} %`;

export function describeHead(s) {
  if (s.induction === undefined) return describeShares(s);
  const score = `induction score ${s.induction.toFixed(2)}`;
  return s.induction >= INDUCTION_HEAD
    ? `induction head on repeated random words (${score}): there it looks at the word after an earlier occurrence of the current word; on held-out text, ${describeShares(s)}`
    : `${describeShares(s)}; ${score}`;
}

function describeShares(s) {
  const shares = [
    ['looks at the previous word', s.prev],
    ['looks at the word itself', s.self],
    ['looks at the first word', s.first],
  ].sort((a, b) => b[1] - a[1]);
  const second = `${shares[1][0].replace('looks at ', '')}: ${pct(shares[1][1])}`;
  if (shares[0][1] >= 0.5) return `${shares[0][0]}: ${pct(shares[0][1])} of its weight (${second})`;
  const back = `${s.meanDistance.toFixed(1)} words back on average`;
  if (s.entropyBits < 1) {
    const top = shares[0][1] >= 0.25 ? `; ${shares[0][0].replace('looks at ', '')}: ${pct(shares[0][1])}` : '';
    return `looks at one word at a time (entropy ${s.entropyBits.toFixed(1)} bits), ${back}${top}`;
  }
  if (shares[0][1] >= 0.25) return `${shares[0][0]}: ${pct(shares[0][1])} of its weight (${second})`;
  return `spreads its weight: ${back}, entropy ${s.entropyBits.toFixed(1)} bits`;
}
