// One loaded wasm module and what every object built on it shares: its heap and whether it
// was disposed.
//
// Ownership: the object createAttention() returns owns the runtime. dispose() stops its
// threads and lets the module go; an owner collected without dispose() gets the same from
// a finalizer, once no layer made from it is left either (layers keep their owner alive).
import { StructWriter, throwIfFailed } from './binding.js';
import { Heap } from './heap.js';
import { Owned } from './owned.js';
import { disposedError } from './validate.js';

const ownerOf = new WeakMap(); // layer -> the owner it keeps alive

export class Runtime {
  #owner; // a WeakRef: the runtime must not keep its owner alive
  #owned;
  #structs; // where each call's struct arguments go (binding.js)

  constructor(module, owner) {
    this.module = module;
    this.heap = new Heap(module);
    this.#structs = new StructWriter(module, this.heap);
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
  // prefixed with the public entry's name. A struct argument (a builder's object, binding.js)
  // goes in as the address of its bytes in wasm memory.
  call(where, binding, ...args) {
    this.#structs.begin();
    for (let i = 0; i < args.length; ++i) {
      if (typeof args[i] === 'object' && args[i] !== null) args[i] = this.#structs.write(args[i]);
    }
    throwIfFailed(where, this.module[binding](...args));
  }

  // Joins the pool's threads and terminates the module's workers; safe to call twice.
  dispose() {
    this.#owned.release();
  }
}
