// A matrix as pixels, one per cell, for drawing many cells at once: a heatmap of more cells than
// fillRect draws in a frame (heatmap.js), and the downsampled overview of a long input (overview.js).
//
//   colourScale(spec) -> { min, max, maxAbs, unitTop, hasMasked, colour(v) -> { css, rgb },
//                          rgb: the scale's bytes (colors.js), index(v) -> its entry }
//     the colour range of a heatmap spec (heatmap.js): 'unit' from 0 to spec.domainMax or a round
//     number above the largest value, 'signed' ±spec.maxAbs or ±max|v|
//   rasterize(spec) -> <canvas> of cols × rows px: each cell's colour, masked cells
//     (-Infinity, or where spec.maskedCells(r, c)) in the masked grey
//   drawScaled(g, raster, x, y, w, h)   raster onto g over (x, y, w, h): averaged where it shrinks,
//     sharp cells where it grows
//
// Both are kept per data array and colour settings (the steps show the same matrix more than once,
// and a 512 × 512 matrix takes a while to scan and colour): a spec's data must not change.
import {
  DIVERGING,
  DIVERGING_RGB,
  MASKED_FILL,
  SEQUENTIAL,
  SEQUENTIAL_RGB,
  divergingIndex,
  sequentialIndex,
  weightTop,
} from './colors.js';

// data -> [{ spec, value }]: what was made for a spec of these data with the same settings.
function memo(keys) {
  const cache = new WeakMap();
  const same = (a, b) => keys.every((k) => a[k] === b[k]);
  return {
    get: (spec) => cache.get(spec.data)?.find((e) => same(e.spec, spec))?.value,
    set(spec, value) {
      if (!cache.has(spec.data)) cache.set(spec.data, []);
      cache.get(spec.data).push({ spec, value });
    },
  };
}
const SCALE_KEYS = ['scale', 'maxAbs', 'domainMax'];
const scales = memo(SCALE_KEYS);
const rasters = memo([...SCALE_KEYS, 'maskedCells', 'shape']);

export function colourScale(spec) {
  const known = scales.get(spec);
  if (known) return known;
  let min = Infinity,
    max = -Infinity,
    hasMasked = false;
  const { data } = spec;
  for (let k = 0; k < data.length; ++k) {
    const v = data[k];
    if (v === -Infinity) {
      hasMasked = true;
      continue;
    }
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) min = max = 0;
  const maxAbs = spec.maxAbs ?? Math.max(Math.abs(min), Math.abs(max));
  const unitTop = spec.domainMax ?? weightTop(max);
  const unit = spec.scale === 'unit';
  const index = unit ? (v) => sequentialIndex(v / unitTop) : (v) => divergingIndex(v, maxAbs);
  const table = unit ? SEQUENTIAL : DIVERGING;
  const scale = {
    min,
    max,
    maxAbs,
    unitTop,
    hasMasked,
    colour: (v) => table[index(v)],
    rgb: unit ? SEQUENTIAL_RGB : DIVERGING_RGB,
    index,
  };
  scales.set(spec, scale);
  return scale;
}

const MASKED_RGB = [1, 3, 5].map((i) => parseInt(MASKED_FILL.slice(i, i + 2), 16));

export function rasterize(spec) {
  const known = rasters.get(spec);
  if (known) return known;
  const [rows, cols] = spec.shape;
  const { data, maskedCells } = spec;
  const { rgb, index } = colourScale(spec);
  const canvas = document.createElement('canvas');
  canvas.width = cols;
  canvas.height = rows;
  const g = canvas.getContext('2d');
  const image = g.createImageData(cols, rows);
  const px = image.data;
  for (let r = 0, k = 0; r < rows; ++r) {
    for (let c = 0; c < cols; ++c, ++k) {
      const v = data[k];
      if (v === -Infinity || (maskedCells && maskedCells(r, c))) {
        px[4 * k] = MASKED_RGB[0];
        px[4 * k + 1] = MASKED_RGB[1];
        px[4 * k + 2] = MASKED_RGB[2];
      } else {
        const e = 3 * index(v);
        px[4 * k] = rgb[e];
        px[4 * k + 1] = rgb[e + 1];
        px[4 * k + 2] = rgb[e + 2];
      }
      px[4 * k + 3] = 255;
    }
  }
  g.putImageData(image, 0, 0);
  rasters.set(spec, canvas);
  return canvas;
}

export function drawScaled(g, raster, x, y, w, h) {
  g.save();
  const shrinks = w < raster.width || h < raster.height;
  g.imageSmoothingEnabled = shrinks;
  if (shrinks) g.imageSmoothingQuality = 'high';
  g.drawImage(raster, x, y, w, h);
  g.restore();
}
