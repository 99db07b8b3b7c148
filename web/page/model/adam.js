// Adam (Kingma & Ba 2015) as a direction for the package's plain-SGD step():
//   m = β1·m + (1−β1)·g,  v = β2·v + (1−β2)·g²,  dir = m̂ / (√v̂ + ε)
// so that layer.step({ dw: dir }, lr) performs w -= lr·dir; update(name, g, w, lr) does that
// step itself on a plain array (train.js' output layer). One Adam per named parameter.
export function createAdam({ beta1 = 0.9, beta2 = 0.999, eps = 1e-8 } = {}) {
  const state = new Map();
  let t = 0;
  return {
    tick() {
      ++t;
    },
    direction(name, g) {
      if (!state.has(name)) state.set(name, { m: new Float32Array(g.length), v: new Float32Array(g.length) });
      const { m, v } = state.get(name);
      const c1 = 1 - beta1 ** t,
        c2 = 1 - beta2 ** t;
      const dir = new Float32Array(g.length);
      for (let i = 0; i < g.length; ++i) {
        m[i] = beta1 * m[i] + (1 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
        dir[i] = m[i] / c1 / (Math.sqrt(v[i] / c2) + eps);
      }
      return dir;
    },
    // w -= lr · direction(name, g), the same floats, without the direction array
    update(name, g, w, lr) {
      if (!state.has(name)) state.set(name, { m: new Float32Array(g.length), v: new Float32Array(g.length) });
      const { m, v } = state.get(name);
      const c1 = 1 - beta1 ** t,
        c2 = 1 - beta2 ** t;
      for (let i = 0; i < g.length; ++i) {
        m[i] = beta1 * m[i] + (1 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
        w[i] -= lr * Math.fround(m[i] / c1 / (Math.sqrt(v[i] / c2) + eps));
      }
    },
  };
}
