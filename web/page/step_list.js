// The stepper's pills, grouped by part, and the kicker above the step's title.
//
//   renderStepList(element, steps, current)   one button per step, data-step = its index
//   stepKicker(step, index, count, ctx)       "Backward, head 1 of 4 · step N of M"
import { esc } from './format.js';

const GROUPS = [
  ['one', 'One head'],
  ['all', 'All heads'],
  ['back', 'Backward'],
];

export function renderStepList(el, steps, current) {
  el.innerHTML = GROUPS.map(([part, label]) => {
    const items = steps
      .map((s, i) => ({ s, i }))
      .filter(({ s }) => s.part === part)
      .map(
        ({ s, i }) =>
          `<li><button type="button" class="step-pill" data-step="${i}" aria-label="Step ${i + 1} ${esc(s.label)}: ${esc(s.title)}"${i === current ? ' aria-current="step"' : ''}>` +
          `<span class="n">${i + 1}</span> <span class="lbl" aria-hidden="true">${esc(s.label)}</span></button></li>`,
      )
      .join('');
    return `<div class="step-group" role="group" aria-label="${label}"><span class="group-label" aria-hidden="true">${label}</span><ol>${items}</ol></div>`;
  }).join('');
}

export function stepKicker(step, index, count, ctx) {
  const headText = ctx.heads === 1 ? 'the one head' : `head ${ctx.head + 1} of ${ctx.heads}`;
  const part =
    step.part === 'back'
      ? step.scope === 'head'
        ? `Backward, ${headText}`
        : 'Backward, the whole layer'
      : step.part === 'one'
        ? ctx.heads === 1
          ? 'Single-head attention'
          : `One head (head ${ctx.head + 1} of ${ctx.heads})`
        : `Multi-head attention (${ctx.heads} head${ctx.heads > 1 ? 's' : ''})`;
  return `${part} · step ${index + 1} of ${count}`;
}
