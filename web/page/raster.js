// A matrix as pixels, one per cell, for drawing many cells at once: a heatmap of more cells than
// fillRect draws in a frame (heatmap.js), and the downsampled overview of a long input (overview.js).
//
//   colourScale(spec) -> { min, max, maxAbs, unitTop, hasMasked, colour(v) -> { css, rgb } }
//     the colour range of a heatmap spec (heatmap.js): 'unit' from 0 to spec.domainMax or a round
//     number above the largest value, 'signed' ±spec.maxAbs or ±max|v|
//   rasterize(spec, colour) -> <canvas> of cols × rows px: each cell's colour, masked cells
//     (-Infinity, or where spec.maskedCells(r, c)) in the masked grey
//   drawScaled(g, raster, x, y, w, h)   raster onto g over (x, y, w, h): averaged where it shrinks,
//     sharp cells where it grows
import { MASKED_FILL, diverging, sequential, weightTop } from './colors.js';

export function colourScale(spec) {
  let min = Infinity,
    max = -Infinity,
    hasMasked = false;
  for (const v of spec.data) {
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
  const colour = spec.scale === 'unit' ? (v) => sequential(v / unitTop) : (v) => diverging(v, maxAbs);
  return { min, max, maxAbs, unitTop, hasMasked, colour };
}

const MASKED_RGB = [1, 3, 5].map((i) => parseInt(MASKED_FILL.slice(i, i + 2), 16));

export function rasterize(spec, colour) {
  const [rows, cols] = spec.shape;
  const { data } = spec;
  const maskedAt = spec.maskedCells ?? (() => false);
  const canvas = document.createElement('canvas');
  canvas.width = cols;
  canvas.height = rows;
  const g = canvas.getContext('2d');
  const image = g.createImageData(cols, rows);
  const px = image.data;
  for (let r = 0, k = 0; r < rows; ++r) {
    for (let c = 0; c < cols; ++c, ++k) {
      const v = data[k];
      const rgb = v === -Infinity || maskedAt(r, c) ? MASKED_RGB : colour(v).rgb;
      px[4 * k] = rgb[0];
      px[4 * k + 1] = rgb[1];
      px[4 * k + 2] = rgb[2];
      px[4 * k + 3] = 255;
    }
  }
  g.putImageData(image, 0, 0);
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
