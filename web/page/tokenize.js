// The page's tokenizer: byte-level BPE in the style of GPT-2 and karpathy/minbpe (regex.py). Any
// string is its UTF-8 bytes, so every input has tokens and none is unknown; the tokens' bytes,
// back to back, are the input's. Pure functions, no DOM, no dependencies.
//
//   createTokenizer({ pattern, merges }) -> tokenizer
//     pattern  the split regex (SPLIT_PATTERN; the manifest keeps the one it was trained with)
//     merges   [[a, b]]: merge i makes token 256 + i from tokens a, b; tokens 0..255 are bytes
//   tokenizer.size                 V = 256 + merges.length tokens
//   tokenizer.pieces               (V) each token's text: its bytes as UTF-8, or for bytes that are
//                                  not whole characters (an emoji's 4 bytes in pieces) "<F0>" etc.
//   tokenizer.bytes(id)            the token's bytes (Uint8Array)
//   tokenizer.encode(text)         -> [{ text, id, start, end }] in order; text the token's piece,
//                                  start, end UTF-16 offsets (String.prototype.slice) of the
//                                  characters its bytes fall in: a piece of a character shares
//                                  the character's offsets with the other pieces
//   tokenizer.decode(ids)          -> the string whose tokens they are (decode(encode(s)) === s)
//   tokenize(text, tokenizer)      tokenizer.encode(String(text ?? ''))
//   pieceLabel(text)               the piece as chips and axes show it: a space "␣", a newline
//                                  "↵", a tab "⇥", so that " the" and "the" differ on screen
//
// Encoding, as minbpe's RegexTokenizer: the text is split by `pattern` into chunks (a word with
// its leading space, a number, a run of punctuation, whitespace), each chunk's bytes are merged
// pair by pair, always the pair whose merge was learned first, until no learned pair is left.
// Training the merges: scripts/train/bpe.mjs.

// GPT-2's split pattern (OpenAI's encoder.py; minbpe GPT2_SPLIT_PATTERN), JavaScript's form.
export const SPLIT_PATTERN = "'(?:[sdmt]|ll|ve|re)| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const utf8 = new TextEncoder();
const strict = new TextDecoder('utf-8', { fatal: true });
const hex = (b) => `<${b.toString(16).toUpperCase().padStart(2, '0')}>`;

// bytes -> their text, or for bytes that are not whole UTF-8 characters, each byte as "<HH>"
function pieceText(bytes) {
  try {
    return strict.decode(bytes);
  } catch {
    return Array.from(bytes, hex).join('');
  }
}

export function pieceLabel(text) {
  return text.replace(/ /g, '\u2423').replace(/\n/g, '\u21b5').replace(/\t/g, '\u21e5');
}

export function createTokenizer({ pattern = SPLIT_PATTERN, merges }) {
  const V = 256 + merges.length;
  const bytes = Array.from({ length: 256 }, (_, b) => Uint8Array.of(b));
  const rank = new Map(); // a·V + b -> the merge's index
  merges.forEach(([a, b], i) => {
    if (!(a >= 0 && a < 256 + i && b >= 0 && b < 256 + i))
      throw new RangeError(`tokenizer: merge ${i} joins tokens ${a} and ${b}, not both below ${256 + i}`);
    const joined = new Uint8Array(bytes[a].length + bytes[b].length);
    joined.set(bytes[a]);
    joined.set(bytes[b], bytes[a].length);
    bytes.push(joined);
    rank.set(a * V + b, i);
  });
  const pieces = bytes.map(pieceText);
  const split = new RegExp(pattern, 'gu');
  const cache = new Map(); // chunk -> its token ids (words repeat: typing re-encodes the text)

  // chunk -> token ids: merge the lowest-ranked learned pair until none is left
  function encodeChunk(chunk) {
    let ids = cache.get(chunk);
    if (ids) return ids;
    ids = Array.from(utf8.encode(chunk));
    while (ids.length > 1) {
      let best = -1,
        bestRank = Infinity;
      for (let i = 0; i + 1 < ids.length; ++i) {
        const r = rank.get(ids[i] * V + ids[i + 1]);
        if (r !== undefined && r < bestRank) [best, bestRank] = [i, r];
      }
      if (best < 0) break;
      const [a, b] = merges[bestRank];
      const out = [];
      for (let i = 0; i < ids.length; ++i) {
        if (i + 1 < ids.length && ids[i] === a && ids[i + 1] === b) {
          out.push(256 + bestRank);
          ++i;
        } else out.push(ids[i]);
      }
      ids = out;
    }
    if (cache.size > 50000) cache.clear();
    cache.set(chunk, ids);
    return ids;
  }

  function encode(text) {
    const out = [];
    for (const m of text.matchAll(split)) {
      const chunk = m[0];
      // byte k of the chunk lies in the character at UTF-16 offset charAt[k] (ends: charEnd[k])
      const charAt = [],
        charEnd = [];
      for (let i = 0; i < chunk.length;) {
        const cp = chunk.codePointAt(i);
        const w = cp > 0xffff ? 2 : 1;
        const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        for (let k = 0; k < n; ++k) {
          charAt.push(i);
          charEnd.push(i + w);
        }
        i += w;
      }
      let k = 0;
      for (const id of encodeChunk(chunk)) {
        const len = bytes[id].length;
        out.push({ text: pieces[id], id, start: m.index + charAt[k], end: m.index + charEnd[k + len - 1] });
        k += len;
      }
    }
    return out;
  }

  function decode(ids) {
    const all = new Uint8Array(ids.reduce((s, id) => s + bytes[id].length, 0));
    let o = 0;
    for (const id of ids) {
      all.set(bytes[id], o);
      o += bytes[id].length;
    }
    return new TextDecoder().decode(all);
  }

  return { size: V, pieces, pattern, bytes: (id) => bytes[id], encode, decode };
}

export function tokenize(text, tokenizer) {
  return tokenizer.encode(String(text ?? ''));
}
