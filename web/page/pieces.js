// Work done a piece a task, so that drawing a long input never holds the main thread for long
// (every piece is short; the browser handles input and paints between them).
//
//   nextTask() -> Promise resolved in a later task
//   createPieces() -> run(pieces, apart) -> Promise<boolean>
//     runs the functions in order, each in its own task when `apart` (else all at once, in this
//     one); resolves to false when a newer run() of the same createPieces() began before it was
//     done (its remaining pieces are dropped), else true
export const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

export function createPieces() {
  let generation = 0;
  return async function run(pieces, apart) {
    const id = ++generation;
    for (const [k, piece] of pieces.entries()) {
      if (apart && k > 0) {
        await nextTask();
        if (id !== generation) return false;
      }
      piece();
    }
    return id === generation;
  };
}
