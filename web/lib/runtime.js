// One loaded wasm module and what every object built on it shares: its heap, its build,
// and whether it was disposed.
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

  // Calls a binding that returns "" or an error message, and throws the message as an Error
  // (a RangeError when memory ran out), prefixed with the public entry's name.
  call(where, binding, ...args) {
    const error = this.module[binding](...args);
    if (error) throw new (error.startsWith('out of memory') ? RangeError : Error)(`${where}: ${error}`);
  }

  dispose() {
    if (this.disposed) return;
    this.disposed = true;
    this.module.setThreads(1);  // joins the pool's threads
    this.module.PThread?.terminateAllThreads();
  }
}
