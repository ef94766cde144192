const hexValues = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) hexValues['0123456789abcdef'.charCodeAt(i)] = i;
for (let i = 10; i < 16; i++) hexValues['ABCDEF'.charCodeAt(i - 10)] = i;

/**
 * Protocol Buffers' wire format written in one pass into a buffer that grows by doubling. A nested
 * message reserves one byte for its length (begin) and moves its bytes along when the length needs
 * more (end). Short ASCII strings, most of what a span holds, are copied char by char: the generic
 * UTF-8 path (Buffer.byteLength, then write) costs two calls into the runtime per string.
 */
export class ProtobufWriter {
  private buf: Uint8Array;
  private view: DataView;
  pos = 0;

  constructor(capacity: number) {
    this.buf = new Uint8Array(Math.max(64, capacity));
    this.view = new DataView(this.buf.buffer);
  }

  /** What was written, on the writer's own buffer (the writer is done with it). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  private ensure(bytes: number): void {
    const needed = this.pos + bytes;
    if (needed <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < needed) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }

  tag(field: number, wireType: number): void {
    this.uint32((field << 3) | wireType);
  }

  /** An unsigned varint below 2^32. */
  uint32(value: number): void {
    this.ensure(5);
    let v = value >>> 0;
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  /** An int64 varint of an integer within ±2^63 (negative ones in two's complement, ten bytes). */
  int64(value: number): void {
    if (value >= 0 && value <= 0xffffffff) return this.uint32(value);
    this.ensure(10);
    let low: number;
    let high: number;
    const magnitude = Math.abs(value);
    low = magnitude >>> 0;
    high = Math.floor(magnitude / 0x100000000) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    while (high > 0 || low > 0x7f) {
      this.buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    this.buf[this.pos++] = low;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, value >>> 0, true);
    this.pos += 4;
  }

  /** Four raw bytes, big-endian: a 32-bit word of an id kept as numbers (ServerSpan's). */
  word(value: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, value, false);
    this.pos += 4;
  }

  fixed64(low: number, high: number): void {
    this.ensure(8);
    this.view.setUint32(this.pos, low >>> 0, true);
    this.view.setUint32(this.pos + 4, high >>> 0, true);
    this.pos += 8;
  }

  /**
   * Unix nanoseconds as fixed64 from an [s, ns] pair, exactly: seconds × 1e9 is beyond a double's
   * integers, so seconds are split at 16 bits and each product stays below 2^53.
   */
  hrTime(seconds: number, nanos: number): void {
    const lowProduct = (seconds & 0xffff) * 1e9;
    const highProduct = Math.floor(seconds / 0x10000) * 1e9;
    const low = (lowProduct % 0x100000000) + (highProduct % 0x10000) * 0x10000 + nanos;
    const high =
      Math.floor(lowProduct / 0x100000000) +
      Math.floor(highProduct / 0x10000) +
      Math.floor(low / 0x100000000);
    this.fixed64(low % 0x100000000, high);
  }

  double(value: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, value, true);
    this.pos += 8;
  }

  string(text: string): void {
    const length = text.length;
    if (length < 0x80) {
      this.ensure(length + 1);
      const buf = this.buf;
      const at = this.pos + 1;
      let i = 0;
      for (; i < length; i++) {
        const code = text.charCodeAt(i);
        if (code >= 0x80) break;
        buf[at + i] = code;
      }
      if (i === length) {
        buf[this.pos] = length;
        this.pos = at + length;
        return;
      }
    }
    const bytes = Buffer.byteLength(text, 'utf8');
    this.uint32(bytes);
    this.ensure(bytes);
    Buffer.from(this.buf.buffer, this.buf.byteOffset, this.buf.length).write(text, this.pos, bytes, 'utf8');
    this.pos += bytes;
  }

  /** A W3C id's hex text as the bytes it stands for (length-delimited); an odd or non-hex text as is. */
  hexBytes(hex: string): void {
    const length = hex.length;
    if (length % 2 !== 0 || length >= 0x100) return this.string(hex);
    const bytes = length >>> 1;
    this.ensure(bytes + 1);
    const buf = this.buf;
    let at = this.pos + 1;
    for (let i = 0; i < length; i += 2) {
      const high = hexValues[hex.charCodeAt(i)] ?? -1;
      const low = hexValues[hex.charCodeAt(i + 1)] ?? -1;
      if (high < 0 || low < 0) return this.string(hex);
      buf[at++] = (high << 4) | low;
    }
    buf[this.pos] = bytes;
    this.pos = at;
  }

  /** A copy of what was written from `start` on, to keep. */
  bytesSince(start: number): Uint8Array {
    return this.buf.slice(start, this.pos);
  }

  /** Copies bytes encoded earlier (a field written once and kept). */
  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Starts a length-delimited field's contents: returns what end() needs. */
  begin(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Writes the length of what was written since begin() returned `at`. */
  end(at: number): void {
    const length = this.pos - at - 1;
    let size = 1;
    for (let v = length >>> 7; v > 0; v >>>= 7) size++;
    if (size > 1) {
      this.ensure(size - 1);
      this.buf.copyWithin(at + size, at + 1, this.pos);
      this.pos += size - 1;
    }
    let v = length;
    let p = at;
    while (v > 0x7f) {
      this.buf[p++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[p] = v;
  }
}
