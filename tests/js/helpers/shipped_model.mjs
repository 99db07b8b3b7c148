// The page's data as the tests read it from disk: the shipped trained model (web/page/data/model/:
// manifest, tensors, tokenizer), in the shapes the page's modules take, and a sentence's input.
//
//   loadShippedModel() -> { manifest, tensors, tokenizer, vocab, dim } as weights.js'
//     loadModelFiles gives them
//   sentenceInput(model, text, positionScale = model.manifest.model.positionScale) ->
//     { tokens, ids, n, d, x (n,d) Float32Array }: the page's tokens and X = E[ids] + P
import fs from 'node:fs';
import { embedTokens } from '../../../web/page/model/lm.js';
import { modelFromFiles } from '../../../web/page/model/weights.js';
import { sinusoidalPositions } from '../../../web/page/positions.js';
import { tokenize } from '../../../web/page/tokenize.js';

const MODEL = new URL('../../../web/page/data/model/', import.meta.url);

export function loadShippedModel() {
  const read = (name) => fs.readFileSync(new URL(name, MODEL));
  return modelFromFiles(JSON.parse(read('manifest.json')), read('model.bin'), JSON.parse(read('tokenizer.json')));
}

export function sentenceInput(model, text, positionScale = model.manifest.model.positionScale) {
  const tokens = tokenize(text, model.tokenizer);
  const ids = tokens.map((t) => t.id);
  const n = ids.length,
    d = model.dim;
  const P = sinusoidalPositions(n, d).map((v) => v * positionScale);
  return { tokens, ids, n, d, x: embedTokens(model.tensors.embed.data, ids, d, P) };
}
