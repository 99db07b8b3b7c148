// The lab's one entry into the package's internals: what the bench (scripts/bench/), the
// forensics tools (scripts/forensics/) and the helpers the tests share (scripts/lib/) need that
// the public entry, index.js, does not offer. The lab imports the package through index.js and
// this file only (web/docs/developing.md, "The lab"). Not in package.json's exports, so an app
// cannot import it; what it re-exports may change in any release.
export { BUILDS } from './builds.js';
export { relaxedSimdAvailable } from './features.js';
export { float32ToHalfInto, halfToFloat32 } from './half.js';
export { Heap } from './heap.js';
export { rowBytes } from './kv_cache.js';
export { columns } from './layer_forward.js';
export { Runtime } from './runtime.js';
