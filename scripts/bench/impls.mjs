// The implementations by name, imported only when used (the peers' bundles are big, and a
// child process needs just one of them).
export const IMPLS = {
  ours: () => import('./impl_ours.mjs'),
  tfjs: () => import('./impl_tfjs.mjs'),
  ort: () => import('./impl_ort.mjs'),
  js: () => import('./impl_js.mjs'),
};

export async function createImpl(name, options = {}) {
  const load = IMPLS[name];
  if (!load) throw new Error(`unknown implementation ${name}`);
  return (await load()).create(options);
}
