// The key of the stand-ins that worker_client.js sends in place of what postMessage cannot
// carry (functions, symbols) and worker_host.js turns back into one. Its own module: the
// worker's script must not import worker_client.js, which starts that worker.
export const STAND_IN = '__wasmAttentionStandIn';
