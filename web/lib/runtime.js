// One loaded wasm module and what every object built on it shares: its heap and whether it
// was disposed.
//
// Ownership: the object createAttention() returns owns the runtime. dispose() stops its
// threads and lets the module go; an owner collected without dispose() gets the same from
// a finalizer, once no layer made from it is left either (layers keep their owner alive).
import { throwIfFailed } from './binding.js';
import { Heap } from './heap.js';
import { Owned } from './owned.js';
import { disposedError } from './validate.js';

const ownerOf = new WeakMap(); // layer -> the owner it keeps alive

export class Runtime {
  #owner; // a WeakRef: the runtime must not keep its owner alive
  #owned;

  constructor(module, owner) {
    this.module = module;
    this.heap = new Heap(module);
    this.#owner = new WeakRef(owner);
    this.#owned = new Owned(owner);
    this.#owned.onRelease(() => {
      module.setThreads(1); // joins the pool's threads
      module.PThread?.terminateAllThreads();
    });
  }

  get disposed() {
    return this.#owned.released;
  }

  // A layer (or any object using this runtime) keeps the owner, and so the runtime, alive.
  keepsOwnerAlive(dependent) {
    ownerOf.set(dependent, this.#owner.deref());
    return dependent;
  }

  checkAlive(where) {
    if (this.disposed) throw disposedError('attention', where, true);
  }

  // Calls a binding, which returns a Status, and throws a failed one (see throwIfFailed),
  // prefixed with the public entry's name.
  call(where, binding, ...args) {
    throwIfFailed(where, this.module[binding](...args));
  }

  // Joins the pool's threads and terminates the module's workers; safe to call twice.
  dispose() {
    this.#owned.release();
  }
}
