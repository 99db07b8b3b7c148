// Thrown by an implementation's prepare() for a row it cannot or should not run, so the row
// shows why instead of a time:
//   'n/a'      the implementation has no such operation (onnxruntime-web has no backward;
//              the peers have no counterpart of our layer's backward() alone)
//   'skipped'  it could run but would blow the time budget (the plain JS loop on big shapes)
export class NotAvailable extends Error {
  constructor(kind, reason) {
    super(reason);
    this.kind = kind;
  }
}
