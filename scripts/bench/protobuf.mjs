// A minimal protobuf encoder (the wire format): just enough to write ONNX models without a
// protobuf library. A message is built as a list of encoded fields and flattened into one
// Uint8Array when it is embedded or finished.
//
// Wire types: 0 varint, 2 length-delimited, 5 fixed 32-bit. int64 fields are varints of
// the two's complement (a negative int64 takes 10 bytes), hence BigInt below.

const encoder = new TextEncoder();

function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const bytes = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    bytes.push(b);
  } while (v !== 0n);
  return Uint8Array.from(bytes);
}

const tag = (field, wireType) => varint((field << 3) | wireType);

// A message under construction: chained field writers, then bytes().
export class Message {
  #parts = [];

  #push(...parts) {
    this.#parts.push(...parts);
    return this;
  }

  // int32 / int64 / enum / bool, as a varint. Skips undefined so optional fields stay absent.
  int(field, value) {
    if (value === undefined) return this;
    return this.#push(tag(field, 0), varint(value));
  }

  // A repeated int64, written packed: onnx.proto is proto2, where unpacked is the default,
  // but parsers must accept both forms of a repeated scalar, and packed is shorter.
  packedInts(field, values) {
    if (!values || values.length === 0) return this;
    const body = concat(values.map(varint));
    return this.#push(tag(field, 2), varint(body.length), body);
  }

  float(field, value) {
    if (value === undefined) return this;
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    return this.#push(tag(field, 5), b);
  }

  bytes(field, data) {
    if (data === undefined) return this;
    return this.#push(tag(field, 2), varint(data.length), data);
  }

  string(field, text) {
    if (text === undefined) return this;
    return this.bytes(field, encoder.encode(text));
  }

  // An embedded message (a Message or its bytes).
  message(field, msg) {
    if (msg === undefined) return this;
    return this.bytes(field, msg instanceof Message ? msg.finish() : msg);
  }

  finish() {
    return concat(this.#parts);
  }
}

export function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
