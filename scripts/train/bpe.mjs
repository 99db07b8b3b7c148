// Training the page's byte-level BPE merges (web/page/tokenize.js), as karpathy/minbpe's
// RegexTokenizer.train: split the text into chunks by the pattern, start from each chunk's UTF-8
// bytes, then `size − 256` times merge the most frequent adjacent pair of tokens (counted over all
// chunks, never across two) into a new token.
//
//   trainBpe(texts, size, pattern = SPLIT_PATTERN) -> { pattern, merges: [[a, b]] }
//     ties between pairs of equal count: the smaller a·size + b, so a run is deterministic
//
// Each chunk is counted once with its number of occurrences; every merge recounts the pairs of
// every distinct chunk into one flat table of size² counts.
import { SPLIT_PATTERN } from '../../web/page/tokenize.js';

export function trainBpe(texts, size, pattern = SPLIT_PATTERN) {
  if (!(size >= 256)) throw new RangeError(`trainBpe: size ${size} is below the 256 bytes`);
  const counts = new Map();
  const split = new RegExp(pattern, 'gu');
  for (const text of texts) for (const [chunk] of text.matchAll(split)) counts.set(chunk, (counts.get(chunk) ?? 0) + 1);
  const utf8 = new TextEncoder();
  const words = [...counts].map(([chunk, count]) => ({ ids: Array.from(utf8.encode(chunk)), count }));
  const pairs = new Float64Array(size * size);
  const merges = [];
  for (let id = 256; id < size; ++id) {
    let best = -1,
      bestCount = 0;
    for (const { ids, count } of words) {
      for (let i = 0; i + 1 < ids.length; ++i) {
        const k = ids[i] * size + ids[i + 1];
        const c = (pairs[k] += count);
        if (c > bestCount || (c === bestCount && k < best)) [best, bestCount] = [k, c];
      }
    }
    for (const { ids } of words) for (let i = 0; i + 1 < ids.length; ++i) pairs[ids[i] * size + ids[i + 1]] = 0;
    if (best < 0) break; // every chunk is one token
    const a = Math.floor(best / size),
      b = best % size;
    merges.push([a, b]);
    for (const w of words) {
      const { ids } = w;
      let j = 0;
      for (let i = 0; i < ids.length; ++i) {
        if (i + 1 < ids.length && ids[i] === a && ids[i + 1] === b) {
          ids[j++] = id;
          ++i;
        } else ids[j++] = ids[i];
      }
      ids.length = j;
    }
  }
  return { pattern, merges };
}
