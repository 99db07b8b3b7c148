// Number, shape and text formatting shared by the page's modules.

const MINUS = '\u2212';

// 0.12345 -> "0.1235", -2 -> "−2.0000", -Infinity -> "−∞" (a typographic minus throughout).
export function fmt(v, digits = 4) {
  if (v === -Infinity) return `${MINUS}\u221e`;
  if (v === Infinity) return '\u221e';
  if (Number.isNaN(v)) return 'NaN';
  const s = v.toFixed(digits);
  // "-0.0000" reads as a sign error to a learner: show 0.0000.
  if (/^-0\.?0*$/.test(s)) return s.slice(1);
  return s.startsWith('-') ? MINUS + s.slice(1) : s;
}

// A value with about 3 significant figures, for legends: 12.3, 0.482, −1.05.
export function fmtShort(v) {
  if (!Number.isFinite(v)) return fmt(v);
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  return fmt(v, digits);
}

// [0.5, -1] -> "[0.5000, −1.0000]"
export const fmtList = (xs) => `[${xs.map((x) => fmt(x)).join(', ')}]`;

// [13, 100] -> "13 × 100"
export const fmtShape = (shape) => shape.join(' \u00d7 ');

// Escapes text for innerHTML.
export function esc(s) {
  return String(s).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
}

// A token in curly quotes, for prose and tooltips.
export const quote = (token) => `\u201c${token}\u201d`;

// "1 thread" / "4 threads"
export const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
