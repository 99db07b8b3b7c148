// The page's forms and keys: reads the controls into settings, keeps them consistent with the
// state (which ones apply in which mode), and turns ←/→ into previous/next step.
//
//   bindControls(onChange)      onChange(patch) with patch a part of the settings (state.js); the
//                               Repeat buttons write the sentence twice (REPEAT_EXAMPLE: the example's)
//   syncControls(settings, { dK, dModel })   controls <- settings (disabled fields, d_k and its
//                               range, head choices); dK: the d_k that runs, dModel: the word
//                               vectors' size
//   bindStepKeys(onStep)        onStep(-1 | +1) on ←/→ outside text fields, selects, radios and
//                               boxes that scroll sideways
import { stepNumber } from './steps/index.js';

// The heads offered (index.html) are 1, 2, 4, 5, 10 and 20, divisors of d_model (100) so that
// identity projections can give each head d_model / heads dimensions.
const $ = (id) => document.getElementById(id);
// The Repeat example's sentence (written twice): no word twice but "the", so that each copied
// token has one earlier occurrence; what the model copies there, and without its induction head,
// page_knockout.test.mjs measures.
export const REPEAT_EXAMPLE = 'My brother bought the small green house near the lake.';

function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// An integer from a number field, or null when it is empty or out of [lo, hi].
function readInt(input, lo, hi) {
  const v = Number(input.value);
  return input.value.trim() !== '' && Number.isInteger(v) && v >= lo && v <= hi ? v : null;
}

export function bindControls(onChange) {
  const sentence = $('sentence');
  const typed = debounce(() => onChange({ text: sentence.value }), 150);
  sentence.addEventListener('input', typed);
  // Repeat: the words twice, so the trained model's induction head has a first copy to copy from.
  // As if typed (an input event), so that everything following the sentence hears of it.
  const setText = (text) => {
    sentence.value = text;
    sentence.dispatchEvent(new Event('input'));
  };
  $('repeat').addEventListener('click', () => {
    const text = sentence.value.trim();
    if (text) setText(`${text} ${text}`);
  });
  $('repeat-example').addEventListener('click', () => setText(`${REPEAT_EXAMPLE} ${REPEAT_EXAMPLE}`));

  for (const radio of document.querySelectorAll('input[name="mode"]')) {
    radio.addEventListener('change', () => onChange({ mode: radio.value }));
  }
  for (const radio of document.querySelectorAll('input[name="projection"]')) {
    radio.addEventListener('change', () => onChange({ projection: radio.value }));
  }

  const seed = $('seed');
  const seedChanged = () => {
    const v = readInt(seed, 0, 0xffffffff);
    seed.setAttribute('aria-invalid', String(v === null));
    if (v !== null) onChange({ seed: v, projection: 'random' });
  };
  seed.addEventListener('input', debounce(seedChanged, 200));
  seed.addEventListener('change', seedChanged);
  $('new-seed').addEventListener('click', () => {
    const v = Math.floor(Math.random() * 100000);
    seed.value = String(v);
    onChange({ seed: v, projection: 'random' });
  });

  $('layer').addEventListener('change', (e) => onChange({ layer: Number(e.target.value) }));
  $('heads').addEventListener('change', (e) => onChange({ heads: Number(e.target.value) }));
  const dk = $('dk');
  const dkChanged = () => {
    const v = readInt(dk, 1, Number(dk.max));
    dk.setAttribute('aria-invalid', String(v === null));
    if (v !== null) onChange({ dK: v });
  };
  dk.addEventListener('input', debounce(dkChanged, 200));
  dk.addEventListener('change', dkChanged);
  // The steps' numbers come from their ids (steps/index.js), so the label stays right if they move.
  $('follow-head-label').textContent =
    `Steps ${stepNumber('qkv')}–${stepNumber('weighted')} and ${stepNumber('dhead')}–${stepNumber('dqk')} follow head`;
  $('follow-head').addEventListener('change', (e) => onChange({ head: Number(e.target.value) }));

  $('causal').addEventListener('change', (e) => onChange({ causal: e.target.checked }));
  $('scaling').addEventListener('change', (e) => onChange({ scaling: e.target.checked }));
  $('positions').addEventListener('change', (e) => onChange({ positions: e.target.checked }));
  $('options').addEventListener('submit', (e) => e.preventDefault());
}

export function syncControls(settings, { dK, dModel }) {
  const worked = settings.mode === 'worked';
  for (const radio of document.querySelectorAll('input[name="mode"]')) radio.checked = radio.value === settings.mode;
  $('sentence-area').hidden = worked;
  $('worked-area').hidden = !worked;
  $('token-legend').hidden = worked;

  for (const radio of document.querySelectorAll('input[name="projection"]')) {
    radio.checked = radio.value === settings.projection;
    radio.disabled = worked;
  }
  const random = settings.projection === 'random' && !worked;
  $('seed').disabled = worked;
  $('new-seed').disabled = worked;
  if (Number($('seed').value) !== settings.seed && document.activeElement !== $('seed'))
    $('seed').value = String(settings.seed);

  // The trained model runs as it was trained: causal, with positions, 4 heads.
  const trained = settings.projection === 'trained' && !worked;
  $('layer-field').hidden = !trained;
  $('layer').value = String(settings.layer);

  const heads = $('heads');
  heads.disabled = worked || trained;
  heads.value = String(worked ? 1 : settings.heads);
  const dk = $('dk');
  dk.max = String(dModel);
  dk.readOnly = !random;
  dk.disabled = worked;
  if (document.activeElement !== dk || !random) dk.value = String(dK);
  $('dk-note').innerHTML = worked
    ? 'The worked example has one head with d<sub>k</sub> = 2.'
    : trained
      ? `The trained model has 4 heads of d<sub>k</sub> = ${dK}.`
      : random
        ? `d<sub>k</sub>: the projection size of each head (1 to ${dModel}).`
        : `d<sub>k</sub> = ${dModel} / heads with identity projections.`;

  const follow = $('follow-head');
  const count = worked ? 1 : settings.heads;
  if (follow.options.length !== count) {
    follow.innerHTML = Array.from({ length: count }, (_, k) => `<option value="${k}">${k + 1}</option>`).join('');
  }
  follow.value = String(settings.head);
  follow.disabled = count === 1;

  $('causal').checked = settings.causal;
  $('causal').disabled = trained;
  $('scaling').checked = settings.scaling;
  $('scaling').disabled = trained;
  const positions = $('positions');
  positions.checked = settings.positions && !worked;
  positions.disabled = worked || trained;
}

// ←/→ change the step unless the key means something where the focus is.
function keyBelongsToTarget(t) {
  if (!(t instanceof Element)) return false;
  if (t.isContentEditable || t.closest('textarea, select')) return true;
  if (t.tagName === 'INPUT') return !['checkbox', 'button', 'submit', 'reset'].includes(t.type);
  // A box that scrolls sideways (a wide heatmap on a phone) scrolls with them.
  if (t.scrollWidth > t.clientWidth && /auto|scroll/.test(getComputedStyle(t).overflowX)) return true;
  return false;
}

export function bindStepKeys(onStep) {
  document.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    if (keyBelongsToTarget(e.target)) return;
    e.preventDefault();
    onStep(e.key === 'ArrowLeft' ? -1 : 1);
  });
}
