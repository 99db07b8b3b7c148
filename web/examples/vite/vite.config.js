// Nothing here is for wasm-attention: these two headers make `vite` and `vite preview` serve
// the page cross-origin isolated, which browsers require before they allow threads.
const headers = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default { server: { headers }, preview: { headers } };
