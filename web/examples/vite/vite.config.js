// The README's vite.config.js (docs_examples.test.mjs holds the two equal). The headers make
// `vite` and `vite preview` serve the page cross-origin isolated, which browsers require
// before they allow threads. optimizeDeps.exclude is for the dev server of Vite 5-7 only
// (`vite build` needs nothing, nor Vite 8): their dependency pre-bundling moves the package's
// code into node_modules/.vite/deps/ without the files it names by
// new URL('./file', import.meta.url), whose URLs the dev server then answers with index.html
// (https://github.com/vitejs/vite/issues/8427).
const headers = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default {
  server: { headers }, // `vite` (the dev server): threads
  preview: { headers }, // `vite preview`: threads
  optimizeDeps: { exclude: ['wasm-attention'] },
};
