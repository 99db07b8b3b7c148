// How each implementation configuration is shown: its order, label and chart colour.
// Colours: the Okabe-Ito palette (distinguishable with the common colour-vision
// deficiencies), one hue family per implementation, darker for 1 thread; black for our
// relaxed-SIMD build. Ours without an ISA named is the SIMD128 build.
export const CONFIGS = [
  { key: 'ours-1', label: 'wasm-attention SIMD128, 1 thread', colour: '#0072B2' },
  { key: 'ours-relaxed-1', label: 'wasm-attention relaxed SIMD, 1 thread', colour: '#000000' },
  { key: 'ours-2', label: 'wasm-attention SIMD128, 2 threads', colour: '#56B4E9' },
  { key: 'tfjs-1', label: 'tfjs-wasm 4.22, 1 thread', colour: '#D55E00' },
  { key: 'tfjs-2', label: 'tfjs-wasm 4.22, 2 threads', colour: '#E69F00' },
  { key: 'ort-1', label: 'onnxruntime-web 1.30, 1 thread', colour: '#009E73' },
  { key: 'ort-2', label: 'onnxruntime-web 1.30, 2 threads', colour: '#F0E442' },
  { key: 'js-1', label: 'plain JS loops', colour: '#CC79A7' },
];

export const configOf = (key) => CONFIGS.find((c) => c.key === key) ?? { key, label: key, colour: '#999999' };
export const configOrder = (key) => {
  const i = CONFIGS.findIndex((c) => c.key === key);
  return i < 0 ? CONFIGS.length : i;
};
