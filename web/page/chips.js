// The tokens as chips: one button per token, the followed one pressed, unknown words dashed and
// marked "?" (and said so to screen readers).
//
//   renderChips(list, labels, unknown, onSelect)  ->  setPressed(i)
import { esc } from './format.js';

export function renderChips(list, labels, unknown, onSelect) {
  list.innerHTML = labels.map((label, i) => {
    const unk = unknown[i];
    return `<li><button type="button" class="chip${unk ? ' unknown' : ''}" data-index="${i}" aria-pressed="false"` +
      ` title="token ${i + 1}${unk ? ', not in the vocabulary' : ''}">` +
      `<span class="chip-text">${esc(label)}</span>${unk ? '<span class="q" aria-hidden="true">?</span><span class="visually-hidden"> (not in the vocabulary)</span>' : ''}` +
      '</button></li>';
  }).join('');
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
