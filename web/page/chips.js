// The tokens as chips: one button per token (its piece, a leading space shown as ␣), the followed
// one pressed.
//
//   renderChips(list, labels, onSelect)  ->  setPressed(i), markTarget(j | null)
//
// On the backward steps the loss's target token j is marked too (a ring and "→ j", and said so).
import { esc } from './format.js';
import { LONG_CHIPS } from './limits.js';

// Past LONG_CHIPS tokens each chip is laid out only near the screen (style.css, .chips.long): a
// new target mark would otherwise lay out all 512 again.

export function renderChips(list, labels, onSelect) {
  list.classList.toggle('long', labels.length > LONG_CHIPS);
  list.innerHTML = labels
    .map(
      (label, i) =>
        `<li><button type="button" class="chip" data-index="${i}" aria-pressed="false" title="token ${i + 1}">` +
        `<span class="chip-text">${esc(label)}</span></button></li>`,
    )
    .join('');
  list.onclick = (e) => {
    const button = e.target.closest('button.chip');
    if (button) onSelect(Number(button.dataset.index));
  };
}

export function setPressed(list, i) {
  for (const button of list.querySelectorAll('button.chip')) {
    button.setAttribute('aria-pressed', String(Number(button.dataset.index) === i));
  }
}

export function markTarget(list, j) {
  for (const button of list.querySelectorAll('button.chip')) {
    const on = Number(button.dataset.index) === j;
    button.classList.toggle('target', on);
    let mark = button.querySelector('.tgt');
    if (on && !mark) {
      mark = document.createElement('span');
      mark.className = 'tgt';
      mark.innerHTML =
        '<span aria-hidden="true">target</span><span class="visually-hidden"> (the loss\'s target j)</span>';
      button.append(mark);
    } else if (!on && mark) {
      mark.remove();
    }
  }
}
