// A minimal reader of the protobuf messages in ONNX's backend node tests: a one-node
// model.onnx (ModelProto -> GraphProto -> NodeProto with its AttributeProtos) and the
// TensorProtos of test_data_set_0/input_N.pb, output_N.pb. Only the fields those files use are
// read (onnx/onnx.proto's field numbers below); everything else is skipped by wire type.

// Wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
class Reader {
  constructor(bytes) {
    this.bytes = bytes;
    this.at = 0;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  done() {
    return this.at >= this.bytes.length;
  }

  // A varint as a Number: exact up to 2^53, which dims, enums and lengths stay below. A negative
  // int64 (10 bytes, two's complement) comes back negative.
  varint() {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = this.bytes[this.at++];
      if (b === undefined) throw new RangeError('protobuf: a varint runs past the end');
      value |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    return Number(BigInt.asIntN(64, value));
  }

  // -> [field number, wire type]
  tag() {
    const t = this.varint();
    return [Math.floor(t / 8), t & 7];
  }

  // the bytes of a length-delimited field (a view, not a copy)
  bytesField() {
    const n = this.varint();
    const out = this.bytes.subarray(this.at, this.at + n);
    if (out.length !== n) throw new RangeError('protobuf: a field runs past the end');
    this.at += n;
    return out;
  }

  string() {
    return new TextDecoder().decode(this.bytesField());
  }

  float() {
    const f = this.view.getFloat32(this.at, true);
    this.at += 4;
    return f;
  }

  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.at += 8;
    else if (wire === 2) this.bytesField();
    else if (wire === 5) this.at += 4;
    else throw new RangeError(`protobuf: wire type ${wire} is not read here`);
  }
}

// Calls fields[number](reader, wire) for each field of the message in bytes, skipping the rest.
function readMessage(bytes, fields) {
  const r = new Reader(bytes);
  while (!r.done()) {
    const [number, wire] = r.tag();
    if (fields[number]) fields[number](r, wire);
    else r.skip(wire);
  }
}

// A repeated varint field, packed (wire 2) or not (wire 0), appended to list.
function varints(r, wire, list) {
  if (wire === 0) list.push(r.varint());
  else {
    const inner = new Reader(r.bytesField());
    while (!inner.done()) list.push(inner.varint());
  }
}

// A repeated float field, packed (wire 2) or not (wire 5), appended to list.
function floats(r, wire, list) {
  if (wire === 5) list.push(r.float());
  else {
    const inner = new Reader(r.bytesField());
    while (!inner.done()) list.push(inner.float());
  }
}

// TensorProto.DataType values read here.
export const DATA_TYPES = Object.freeze({ 1: 'float32', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16' });
const ARRAYS = {
  float32: Float32Array,
  int32: Int32Array,
  int64: BigInt64Array,
  bool: Uint8Array,
  float16: Uint16Array,
};

// TensorProto (dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7, name 8,
// raw_data 9) -> { name, dtype, shape, data }: data a Float32Array, Int32Array, BigInt64Array,
// Uint8Array (bool) or Uint16Array (float16 bits), a copy.
export function readTensor(bytes) {
  const t = { name: '', dataType: 0, shape: [], raw: null, floatData: [], int32Data: [], int64Data: [] };
  readMessage(bytes, {
    1: (r, w) => varints(r, w, t.shape),
    2: (r) => (t.dataType = r.varint()),
    4: (r, w) => floats(r, w, t.floatData),
    5: (r, w) => varints(r, w, t.int32Data),
    7: (r, w) => varints(r, w, t.int64Data),
    8: (r) => (t.name = r.string()),
    9: (r) => (t.raw = r.bytesField()),
  });
  const dtype = DATA_TYPES[t.dataType];
  if (!dtype) throw new RangeError(`TensorProto ${t.name}: data_type ${t.dataType} is not read here`);
  const Array_ = ARRAYS[dtype];
  const count = t.shape.reduce((a, b) => a * b, 1);
  let data;
  if (t.raw) {
    // raw_data: little-endian, packed; copied so the array is aligned and owns its memory
    const copy = new Uint8Array(t.raw);
    data = new Array_(copy.buffer, 0, copy.length / Array_.BYTES_PER_ELEMENT);
  } else if (dtype === 'float32') data = Float32Array.from(t.floatData);
  else if (dtype === 'int64') data = BigInt64Array.from(t.int64Data, BigInt);
  else data = Array_.from(t.int32Data); // int32, bool, and float16 (the bits, one per int32)
  if (data.length !== count) {
    throw new RangeError(`TensorProto ${t.name}: ${data.length} values for shape [${t.shape.join(',')}]`);
  }
  return { name: t.name, dtype, shape: t.shape, data };
}

// AttributeProto (name 1, f 2, i 3, s 4, floats 7, ints 8, type 20) -> [name, value].
function readAttribute(bytes) {
  const a = { name: '', type: 0, f: 0, i: 0, s: '', floats: [], ints: [] };
  readMessage(bytes, {
    1: (r) => (a.name = r.string()),
    2: (r) => (a.f = r.float()),
    3: (r) => (a.i = r.varint()),
    4: (r) => (a.s = r.string()),
    7: (r, w) => floats(r, w, a.floats),
    8: (r, w) => varints(r, w, a.ints),
    20: (r) => (a.type = r.varint()),
  });
  // AttributeType: 1 FLOAT, 2 INT, 3 STRING, 6 FLOATS, 7 INTS
  const value = { 1: a.f, 2: a.i, 3: a.s, 6: a.floats, 7: a.ints }[a.type];
  if (value === undefined) throw new RangeError(`AttributeProto ${a.name}: type ${a.type} is not read here`);
  return [a.name, value];
}

// NodeProto (input 1, output 2, name 3, op_type 4, attribute 5, domain 7) -> { opType, domain,
// inputs, outputs (names; '' for one left out), attributes: { name: value } }.
function readNode(bytes) {
  const node = { opType: '', domain: '', inputs: [], outputs: [], attributes: {} };
  readMessage(bytes, {
    1: (r) => node.inputs.push(r.string()),
    2: (r) => node.outputs.push(r.string()),
    4: (r) => (node.opType = r.string()),
    5: (r) => {
      const [name, value] = readAttribute(r.bytesField());
      node.attributes[name] = value;
    },
    7: (r) => (node.domain = r.string()),
  });
  return node;
}

// ModelProto (graph 7, opset_import 8) -> { opset (the default domain's), nodes }.
export function readModel(bytes) {
  const model = { opset: 0, nodes: [] };
  readMessage(bytes, {
    7: (r) => readMessage(r.bytesField(), { 1: (g) => model.nodes.push(readNode(g.bytesField())) }),
    8: (r) => {
      let domain = '',
        version = 0;
      readMessage(r.bytesField(), { 1: (o) => (domain = o.string()), 2: (o) => (version = o.varint()) });
      if (domain === '' || domain === 'ai.onnx') model.opset = version;
    },
  });
  return model;
}
