// The settings in the page's address, so that a link reproduces the view: the sentence, the
// weights, heads, d_k, options, the layer, the step, the followed token and head, the target,
// the learning rate and the two heads compared (state.js's settings), as a query string kept up to date with
// history.replaceState (no new history entry per change).
//
//   settingsQuery(settings) -> 'mode=sentence&text=…&…'   every field below; focus and target
//                                                          only when set
//   readSettingsQuery(search) -> patch   the fields of a query that are valid (others left out,
//                                        so the page keeps its defaults for them)
//   writeUrlSettings(settings)           replaces the address's query with settingsQuery, once
//                                        changes pause for WRITE_DELAY_MS
//
// A setting added to state.js reaches links by a line in FIELDS.
export const WRITE_DELAY_MS = 150;

const oneOf = (values) => (s) => values.find((v) => String(v) === s);
const int = (lo, hi) => (s) => {
  const v = Number(s);
  return /^\d+$/.test(s) && v >= lo && v <= hi ? v : undefined;
};
const bool = (s) => (s === '1' ? true : s === '0' ? false : undefined);
const text = (s) => s;
const pair = (s) => (/^\d,\d{1,2}$/.test(s) ? s : undefined); // 'layer,head', 0-based

// name -> parse(string) -> value, or undefined when invalid. Fields with a null value are left out.
const FIELDS = {
  mode: oneOf(['sentence', 'worked']),
  text,
  projection: oneOf(['identity', 'random', 'trained']),
  layer: int(0, 1),
  seed: int(0, 0xffffffff),
  heads: oneOf([1, 2, 4, 5, 10, 20]), // the #heads choices: divisors of d_model (100)
  dK: int(1, 100),
  causal: bool,
  scaling: bool,
  positions: bool,
  head: int(0, 19),
  step: int(0, 99),
  focus: int(0, 511),
  target: int(0, 511),
  lr: oneOf([0.001, 0.003, 0.01, 0.03, 0.1]), // the #lr choices
  compareA: pair, // the head comparison's two heads
  compareB: pair,
};

const format = (v) => (typeof v === 'boolean' ? (v ? '1' : '0') : String(v));

export function settingsQuery(settings) {
  const q = new URLSearchParams();
  for (const key of Object.keys(FIELDS)) {
    const v = settings[key];
    if (v !== null && v !== undefined) q.set(key, format(v));
  }
  return q.toString();
}

export function readSettingsQuery(search) {
  const q = new URLSearchParams(search);
  const patch = {};
  for (const [key, parse] of Object.entries(FIELDS)) {
    if (!q.has(key)) continue;
    const v = parse(q.get(key));
    if (v !== undefined) patch[key] = v;
  }
  return patch;
}

let pending = 0;
export function writeUrlSettings(settings) {
  // Later, once changes pause: off the render that caused it, and within the browser's limit on
  // replaceState calls while a slider-like control or typing makes many changes.
  clearTimeout(pending);
  pending = setTimeout(() => {
    const query = settingsQuery(settings);
    if (location.search.slice(1) === query) return;
    try {
      history.replaceState(history.state, '', `${location.pathname}?${query}${location.hash}`);
    } catch {
      // A sandboxed frame may refuse: the page works on, without a link to copy.
    }
  }, WRITE_DELAY_MS);
}
