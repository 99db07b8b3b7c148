// Assertions and the unchecked tensor the error suites share.
import assert from 'node:assert/strict';

// error must be exactly Class (not a subclass or another error) with a message matching re.
function assertErrorIs(error, Class, re) {
  assert.ok(error !== undefined, `expected a ${Class.name} matching ${re}, nothing was thrown`);
  assert.equal(error.constructor, Class, `expected a ${Class.name}, got ${error.constructor?.name}: ${error.message}`);
  assert.match(error.message, re);
}

// fn() must throw exactly Class with a message matching re.
export function throwsWith(fn, Class, re) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assertErrorIs(error, Class, re);
}

// promise (of something with dispose(), disposed if it resolves) must reject with exactly
// Class and a message matching re.
export async function rejectsWith(promise, Class, re) {
  let error;
  try {
    (await promise).dispose();
  } catch (e) {
    error = e;
  }
  assertErrorIs(error, Class, re);
}

// A tensor as a plain object, unchecked: for the suites that hand a call malformed or hostile
// tensors (tensor() refuses them itself, before the call; errors.test.mjs holds it to that).
export const rawTensor = (data, shape, options) =>
  options?.dtype === undefined ? { data, shape } : { data, shape, dtype: options.dtype };
