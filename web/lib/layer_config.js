// A multi-head attention layer's configuration and parameters, read once: the config checks,
// the parameters' shapes (the one list of them, PARAMETERS), the check that they fit in wasm
// memory, and their first values (given, or Xavier-uniform from a seed). Nothing here touches
// wasm memory.
import { seededRandom, xavierUniform } from './seeded_random.js';
import {
  checkBoolean,
  checkOptions,
  checkPositiveInteger,
  checkRotary,
  checkSinks,
  checkSoftcap,
  checkTensor,
  checkUint32,
  checkWindow,
  describe,
  showShape,
  tensorValues,
} from './validate.js';

// The layer's parameters, in the order of the core's MhaWeights (and of MhaGrads, each as d<name>):
//   shape: its sizes for a config c
//   flag:  the config's boolean that gives the layer this parameter (none: every layer has it)
//   xavier: drawn Xavier-uniform from the seed, in this order, and required in config.weights;
//          otherwise zeros when left out
export const PARAMETERS = Object.freeze([
  { name: 'wq', shape: (c) => [c.dModel, c.heads * c.dK], xavier: true },
  { name: 'wk', shape: (c) => [c.dModel, c.kvHeads * c.dK], xavier: true },
  { name: 'wv', shape: (c) => [c.dModel, c.kvHeads * c.dV], xavier: true },
  { name: 'wo', shape: (c) => [c.heads * c.dV, c.dModel], xavier: true },
  { name: 'bq', shape: (c) => [c.heads * c.dK], flag: 'bias' },
  { name: 'bk', shape: (c) => [c.kvHeads * c.dK], flag: 'bias' },
  { name: 'bv', shape: (c) => [c.kvHeads * c.dV], flag: 'bias' },
  { name: 'bo', shape: (c) => [c.dModel], flag: 'bias' },
  // one logit per query head in every row's softmax denominator (wa/score_mask.h)
  { name: 'sinks', shape: (c) => [c.heads], flag: 'sinks' },
]);
// What a flag's parameters are called in messages.
const FLAG_NOUNS = { bias: 'biases', sinks: 'sinks' };

const CONFIG_OPTIONS = [
  'dModel',
  'heads',
  'kvHeads',
  'dK',
  'dV',
  'bias',
  'rotary',
  'window',
  'softcap',
  'sinks',
  'weights',
  'seed',
];

// The shape of each parameter of config c (c's flagged-off parameters too: their absence is
// the caller's to decide): name -> sizes.
const parameterShapes = (c) => Object.fromEntries(PARAMETERS.map((p) => [p.name, p.shape(c)]));

// The parameters a layer of config c has.
export const layerParameters = (c) => PARAMETERS.filter((p) => !p.flag || c[p.flag]);

// A RangeError naming the size at fault when the layer's weights could not fit in wasm
// memory: checked from the sizes alone, before any array is made for them.
function checkLayerFits(where, c, shapes) {
  const { dModel, heads, dK, dV } = c;
  const LIMIT = 2 ** 31; // wasm memory's maximum, in bytes
  let total = 0;
  for (const { name } of layerParameters(c)) {
    const shape = shapes[name];
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    total += bytes;
    if (bytes > LIMIT || total > LIMIT) {
      const big =
        dModel >= Math.max(heads * dK, heads * dV)
          ? `dModel ${dModel}`
          : `heads·dK ${heads * dK} or heads·dV ${heads * dV}`;
      throw new RangeError(
        `${where}: dModel ${dModel}, heads ${heads}, dK ${dK}, dV ${dV} need ${name} ${showShape(shape)} (${(bytes / 2 ** 30).toFixed(1)} GB; ${(total / 2 ** 30).toFixed(1)} GB for the weights so far), more than wasm memory holds (2 GB): ${big} is too large`,
      );
    }
  }
}

// sinks: true (learned, starting at 0), false or left out (none), or their first values as a
// Float32Array (or tensor) of heads values, each finite: a learned logit of -Infinity would
// never move (its gradient is 0); leave sinks out for none. -> { sinks: boolean, first:
// Float32Array or null }.
function checkLayerSinks(where, sinks, heads) {
  if (sinks === undefined || sinks === false) return { sinks: false, first: null };
  if (sinks === true) return { sinks: true, first: null };
  if (sinks === null || typeof sinks !== 'object')
    throw new TypeError(
      `${where}: sinks must be true, false or a Float32Array of heads = ${heads} first values, got ${describe(sinks)}`,
    );
  const first = checkSinks(where, sinks, heads);
  const at = first.findIndex((x) => x === -Infinity);
  if (at >= 0)
    throw new RangeError(
      `${where}: sinks[${at}] is -Infinity: a layer's sinks are learned logits and must be finite; leave sinks out for none`,
    );
  return { sinks: true, first };
}

// config (multiHeadAttention's argument), read once -> { config: the layer's (frozen), shapes
// (name -> sizes), given (name -> Float32Array: the first values the config gives), seed (the
// seed the other weights are drawn from, or null when config.weights gives them) }.
export function checkLayerConfig(where, config) {
  const c = checkOptions(where, config, CONFIG_OPTIONS);
  checkPositiveInteger(where, 'dModel', c.dModel);
  checkPositiveInteger(where, 'heads', c.heads);
  const kvHeads = c.kvHeads === undefined ? c.heads : c.kvHeads; // null is refused, not a default
  checkPositiveInteger(where, 'kvHeads', kvHeads);
  if (c.heads % kvHeads !== 0) {
    throw new RangeError(
      `${where}: kvHeads (${kvHeads}) does not divide heads (${c.heads}): query head h reads kv head ⌊h/(heads/kvHeads)⌋`,
    );
  }
  if (c.dK === undefined && c.dModel % c.heads !== 0) {
    throw new RangeError(
      `${where}: heads (${c.heads}) does not divide dModel (${c.dModel}): pass dK (and dV) explicitly`,
    );
  }
  const dK = c.dK === undefined ? c.dModel / c.heads : c.dK;
  checkPositiveInteger(where, 'dK', dK);
  const dV = c.dV === undefined ? dK : c.dV;
  checkPositiveInteger(where, 'dV', dV);
  const bias = checkBoolean(where, 'bias', c.bias);
  if (c.seed !== undefined) checkUint32(where, 'seed', c.seed);
  if (c.seed !== undefined && c.weights !== undefined) {
    throw new TypeError(
      `${where}: seed draws the first weights, and weights gives them: pass one of seed and weights, not both`,
    );
  }
  const rotary = checkRotary(where, c.rotary, dK);
  const window = checkWindow(where, c.window);
  const softcap = checkSoftcap(where, c.softcap);
  const { sinks, first: firstSinks } = checkLayerSinks(where, c.sinks, c.heads);
  const { dModel, heads } = c;
  const layer = Object.freeze({
    dModel,
    heads,
    kvHeads,
    dK,
    dV,
    bias,
    rotary: rotary && Object.freeze(rotary),
    window: Object.freeze(window),
    softcap,
    sinks,
  });
  const shapes = parameterShapes(layer);
  checkLayerFits(where, layer, shapes); // before any array is made
  const given = givenValues(where, layer, shapes, c.weights, firstSinks);
  return { config: layer, shapes, given, seed: c.weights === undefined ? (c.seed ?? 0) : null };
}

// The parameters' first values the config gives: weights (config.weights, each checked against
// its shape) and config.sinks' values (firstSinks) -> name -> Float32Array.
function givenValues(where, c, shapes, weights, firstSinks) {
  const has = layerParameters(c);
  const values = firstSinks ? { sinks: firstSinks } : {};
  if (weights !== undefined) {
    const w = checkOptions(
      where,
      weights,
      PARAMETERS.map((p) => p.name),
      'weights',
    );
    if (firstSinks && w.sinks !== undefined)
      throw new TypeError(
        `${where}: sinks' first values are given twice, in sinks and in weights.sinks; pass sinks: true`,
      );
    for (const { name, xavier } of has) {
      if (w[name] === undefined && !xavier) continue; // zeros, or config.sinks' values
      const given = checkTensor(where, `weights.${name}`, w[name], [shapes[name].length], showShape(shapes[name]));
      if (given.shape.some((d, i) => d !== shapes[name][i])) {
        const { dModel, heads, kvHeads, dK, dV } = c;
        throw new RangeError(
          `${where}: weights.${name} is ${showShape(given.shape)} but ` +
            `dModel ${dModel}, heads ${heads}, ${kvHeads === heads ? '' : `kvHeads ${kvHeads}, `}dK ${dK}, dV ${dV} need ${showShape(shapes[name])}`,
        );
      }
      values[name] = tensorValues(given); // float16 widened: weights are stored as float32
    }
    for (const { name, flag } of PARAMETERS) {
      if (flag && !c[flag] && w[name] !== undefined) {
        throw new TypeError(
          `${where}: weights has ${FLAG_NOUNS[flag]} but ${flag} is not true; pass ${flag}: true to use them`,
        );
      }
    }
  }
  return values;
}

// checkLayerConfig's -> every parameter's first values: those given, else Xavier-uniform from
// the seed (when no weights were given), else zeros. Drawn where the layer is made (in the
// worker form, in its worker).
export function firstValues({ config, shapes, given, seed }) {
  const has = layerParameters(config);
  const values = { ...given };
  if (seed !== null) {
    const next = seededRandom(seed);
    for (const { name, xavier } of has)
      if (xavier) values[name] = xavierUniform(shapes[name][0], shapes[name][1], next);
  }
  return Object.fromEntries(
    has.map(({ name }) => [name, values[name] ?? new Float32Array(shapes[name].reduce((a, b) => a * b, 1))]),
  );
}
