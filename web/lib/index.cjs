// CommonJS entry: require('wasm-attention') gives the same API as the ES module.
// createAttention is async anyway, so it loads the ES module on first use.
'use strict';

exports.createAttention = async function createAttention(options) {
  const { createAttention: create } = await import('./index.js');
  return create(options);
};

// tensor() must be synchronous, and require() cannot load tensor.js (an ES module) under
// Node 20, so this is the one copy of its body; tests/js/api.test.mjs holds the two
// equal. (From Node 22.12, require() of an ES module could replace it.)
exports.tensor = function tensor(data, shape, options) {
  return options?.dtype === undefined ? { data, shape } : { data, shape, dtype: options.dtype };
};
