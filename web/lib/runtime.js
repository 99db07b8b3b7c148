// One loaded wasm module and what every object built on it shares: its heap, its build,
// and whether it was disposed.
import { throwIfFailed } from './binding.js';
import { Heap } from './heap.js';

export class Runtime {
  constructor(module, variant) {
    this.module = module;
    this.variant = variant;
    this.heap = new Heap(module);
    this.disposed = false;
  }

  checkAlive(where) {
    if (this.disposed) {
      throw new TypeError(`${where}: this attention instance was disposed; create a new one with createAttention()`);
    }
  }

  // Calls a binding, which returns a Status, and throws a failed one (see throwIfFailed),
  // prefixed with the public entry's name.
  call(where, binding, ...args) {
    throwIfFailed(where, this.module[binding](...args));
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.module.setThreads(1);  // joins the pool's threads
    this.module.PThread?.terminateAllThreads();
  }
}
