/**
 * Decodes an OTLP ExportTraceServiceRequest sent as protobuf (the exporter's default) into the shape
 * OTLP/JSON gives the same request, for the parts the tests read: resource attributes, span ids
 * (hex), parent, name, kind, attributes, links. Field numbers from opentelemetry-proto's trace.proto,
 * common.proto and resource.proto.
 */

type Field = { no: number; wire: number; value: bigint | Buffer };

function* fields(buf: Buffer): Generator<Field> {
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[at++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const [no, wire] = [key >>> 3, key & 7];
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) {
      yield { no, wire, value: buf.subarray(at, at + 8) };
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      yield { no, wire, value: buf.subarray(at, at + length) };
      at += length;
    } else if (wire === 5) {
      yield { no, wire, value: buf.subarray(at, at + 4) };
      at += 4;
    } else throw new Error(`unexpected protobuf wire type ${wire}`);
  }
}

const all = (buf: Buffer, no: number): Buffer[] =>
  [...fields(buf)].filter((f) => f.no === no && f.wire === 2).map((f) => f.value as Buffer);
const one = (buf: Buffer, no: number): Field | undefined => [...fields(buf)].find((f) => f.no === no);

type AnyValue = {
  stringValue?: string;
  intValue?: string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: AnyValue[] };
};

function anyValue(buf: Buffer): AnyValue {
  const f = [...fields(buf)][0];
  if (f === undefined) return {};
  switch (f.no) {
    case 1:
      return { stringValue: (f.value as Buffer).toString('utf8') };
    case 2:
      return { boolValue: f.value !== 0n };
    case 3:
      return { intValue: BigInt.asIntN(64, f.value as bigint).toString() };
    case 4:
      return { doubleValue: (f.value as Buffer).readDoubleLE(0) };
    case 5:
      return { arrayValue: { values: all(f.value as Buffer, 1).map(anyValue) } };
    default:
      return {};
  }
}

const keyValues = (buf: Buffer, no: number) =>
  all(buf, no).map((kv) => ({
    key: (one(kv, 1)?.value as Buffer | undefined)?.toString('utf8') ?? '',
    value: anyValue((one(kv, 2)?.value as Buffer | undefined) ?? Buffer.alloc(0)),
  }));

const hex = (f: Field | undefined) => (f ? (f.value as Buffer).toString('hex') : '');

export function decodeTraceRequest(body: Buffer) {
  return {
    resourceSpans: all(body, 1).map((rs) => {
      const resource = one(rs, 1);
      return {
        resource: { attributes: resource ? keyValues(resource.value as Buffer, 1) : [] },
        scopeSpans: all(rs, 2).map((ss) => ({
          spans: all(ss, 2).map((span) => ({
            traceId: hex(one(span, 1)),
            spanId: hex(one(span, 2)),
            parentSpanId: hex(one(span, 4)) || undefined,
            name: (one(span, 5)?.value as Buffer | undefined)?.toString('utf8') ?? '',
            kind: Number(one(span, 6)?.value ?? 0n),
            attributes: keyValues(span, 9),
            links: all(span, 13).map((link) => ({ traceId: hex(one(link, 1)), spanId: hex(one(link, 2)) })),
          })),
        })),
      };
    }),
  };
}
