// Character vectors from an R package's lazy-load data base (data/Rdata.rdb, as Debian's
// r-cran-* packages install them), read without R: the file is a run of blocks, each a 4-byte
// big-endian length and a zlib stream of one object in R's XDR serialization (format 2 or 3).
// Only top-level character vectors (STRSXP, type 16) are kept; other objects are skipped.
//
//   readRdbStrings(buffer) -> [[string]]: each character vector's elements, in file order (NA as '')
import zlib from 'node:zlib';

const STRSXP = 16;

export function readRdbStrings(buffer) {
  const vectors = [];
  let off = 0;
  while (off + 4 < buffer.length) {
    const { buffer: out, engine } = zlib.inflateSync(buffer.subarray(off + 4), { info: true });
    off += 4 + engine.bytesWritten; // the compressed bytes this block took
    if (out.subarray(0, 2).toString('latin1') !== 'X\n') throw new Error('rdata: not an XDR serialization');
    let p = 2;
    const int = () => {
      const v = out.readInt32BE(p);
      p += 4;
      return v;
    };
    const version = int();
    int(); // the writer's R version
    int(); // the oldest R that reads it
    if (version === 3) {
      const nameLength = int(); // the native encoding's name follows
      p += nameLength;
    }
    const flags = int();
    if ((flags & 0xff) !== STRSXP) continue;
    const lines = [];
    for (let i = int(); i > 0; --i) {
      int(); // the element's CHARSXP flags (encoding bits)
      const length = int();
      lines.push(length < 0 ? '' : out.toString('utf8', p, p + length));
      p += Math.max(length, 0);
    }
    vectors.push(lines);
  }
  return vectors;
}
