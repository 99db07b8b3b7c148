// Module hooks (node:module register()) that let Node load tfjs-core's ES module build
// from dist/: its files use extensionless relative imports ('./ops/mat_mul') and sit in a
// package without "type": "module", both of which Node's ESM loader refuses. Only files
// under the peers' tfjs-core dist/ are touched. See tfjs_gradients.mjs for why.
const inCoreDist = (url) => typeof url === 'string' && url.includes('/@tensorflow/tfjs-core/dist/');

export async function resolve(specifier, context, next) {
  if (inCoreDist(context.parentURL) && /^\.{1,2}\//.test(specifier) && !/\.m?js$/.test(specifier)) {
    return next(`${specifier}.js`, context);
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (inCoreDist(url) && url.endsWith('.js')) return next(url, { ...context, format: 'module' });
  return next(url, context);
}
