// CommonJS entry: require('wasm-attention') gives the same API as the ES module.
// createAttention is async anyway, so it loads the ES module on first use.
'use strict';

exports.createAttention = async function createAttention(options) {
  const { createAttention: create } = await import('./index.js');
  return create(options);
};

exports.tensor = function tensor(data, shape) {
  return { data, shape };
};
