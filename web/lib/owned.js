// What a public object (an attention instance, a kv cache, a layer) owns, and the one place it
// is let go: blocks of wasm memory (alloc, put, putFinite; free hands one back early) and
// other things to close (onRelease: a cache's core object, a runtime's threads).
// release() lets all of it go, once: from the owner's dispose(), or from the finalizer when the
// owner is garbage-collected without dispose().
//
// An Owned must not reference its owner: the registry holds it strongly, which would keep the
// owner alive forever.
const leftBehind = new FinalizationRegistry((owned) => owned.release());

export class Owned {
  #rt; // the runtime whose heap the blocks are in; null for the runtime itself (no blocks)
  #blocks = new Set();
  #closers = [];
  #released = false;

  constructor(owner, rt = null) {
    this.#rt = rt;
    leftBehind.register(owner, this, this);
  }

  get released() {
    return this.#released;
  }

  // Heap.alloc, put and putFinite, the block kept until free(ptr) or release().
  alloc(bytes, what) {
    return this.#keep(this.#rt.heap.alloc(bytes, what));
  }
  put(data, what) {
    return this.#keep(this.#rt.heap.put(data, what));
  }
  putFinite(data, where, name) {
    return this.#keep(this.#rt.heap.putFinite(data, where, name));
  }

  // Frees one block now (0 and blocks already freed are ignored).
  free(ptr) {
    if (this.#blocks.delete(ptr) && !this.#rt.disposed) this.#rt.heap.free(ptr);
  }

  // close() runs at release(), the last added first.
  onRelease(close) {
    this.#closers.push(close);
  }

  // Closes and frees everything; safe to call twice. Once the runtime is disposed its memory
  // goes with it: nothing is freed into it.
  release() {
    if (this.#released) return;
    this.#released = true;
    leftBehind.unregister(this);
    const blocks = [...this.#blocks];
    this.#blocks.clear();
    if (this.#rt?.disposed) return;
    for (const close of this.#closers.reverse()) close();
    for (const p of blocks) this.#rt.heap.free(p);
  }

  #keep(ptr) {
    this.#blocks.add(ptr);
    return ptr;
  }
}
