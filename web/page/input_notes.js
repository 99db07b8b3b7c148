// The two sentences under the input: how the text was split into tokens, and which weights run.
//
//   renderTokenStatus(element, input)                input: prepareInput's, or null (no tokens)
//   renderWeightsNote(element, settings, { heads, dK, dModel })
import { MAX_TOKENS } from './limits.js';
import { plural } from './format.js';

export function renderTokenStatus(el, input) {
  el.classList.toggle('warn', !input || input.truncatedFrom !== null);
  if (!input) {
    el.textContent = 'Type a sentence to start: the steps below need at least one token.';
  } else if (input.truncatedFrom !== null) {
    el.textContent = `${input.truncatedFrom} tokens: the page uses the first ${MAX_TOKENS}, so that every matrix stays readable. Shorten the text to see the rest.`;
  } else {
    el.textContent = `${plural(input.labels.length, 'token')} (up to ${MAX_TOKENS}).`;
  }
}

export function renderWeightsNote(el, settings, { heads, dK, dModel }) {
  let text;
  if (settings.mode === 'worked') {
    text =
      "Weights: the worked example's fixed W<sub>Q</sub> = I, W<sub>K</sub> = [1 1; 0 1], W<sub>V</sub> = I and W<sub>O</sub> = I.";
  } else if (settings.projection === 'identity') {
    text =
      '<strong>Identity projections:</strong> W<sub>Q</sub> = W<sub>K</sub> = W<sub>V</sub> = I and W<sub>O</sub> = I, so attention runs on the raw similarity of the token embeddings.' +
      (heads > 1 ? ` With ${heads} heads, each head uses its own ${dK} of the ${dModel} dimensions.` : '');
  } else if (settings.projection === 'trained') {
    text = `<strong>Trained:</strong> a 2-layer, 4-head causal language model trained with this library on US State of the Union addresses (<code>npm run train-model</code>). The steps show layer ${settings.layer + 1}; causal mask and positions are part of the model.`;
  } else {
    text = `<strong>Random projections:</strong> Xavier-uniform weights drawn by the library's seeded initializer from seed ${settings.seed}: W<sub>Q</sub>, W<sub>K</sub>, W<sub>V</sub> are ${dModel}×${heads * dK} (${heads} head${heads > 1 ? 's' : ''} of d<sub>k</sub> = ${dK}), W<sub>O</sub> is ${heads * dK}×${dModel}. Change the seed for other weights.`;
  }
  el.innerHTML = text;
}
