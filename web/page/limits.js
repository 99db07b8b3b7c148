// The page's limits for long inputs, in one place: how many tokens it takes, and past how many
// rows (tokens) or cells each view switches to the form that keeps a long input fast.
//
//   MAX_TOKENS       tokens kept of a longer text (input.js; the notes say it was cut)
//   WORKER_TOKENS    past it, the recompute runs in the library's worker form (offload.js)
//   LONG_ROWS        heatmaps with more token rows are an overview and a zoom (overview.js)
//   LONG_TABLE_ROWS  longer readout tables are laid out a chunk at a time (steps/readout.js)
//   LONG_CHIPS       past it, token chips are laid out only near the screen (chips.js)
//   FAST_CELLS       matrices with more cells are drawn as pixels (heatmap.js, raster.js)
export const MAX_TOKENS = 512;
export const WORKER_TOKENS = 128;
export const LONG_ROWS = 64;
export const LONG_TABLE_ROWS = 64;
export const LONG_CHIPS = 64;
export const FAST_CELLS = 20000;
