/**
 * The demo's gRPC contract, written by hand: package `weft.demo`, service `Echo` with a unary `Say` and a
 * server-streaming `Count`. The messages are encoded in the protobuf wire format with @bufbuild/protobuf's
 * reader and writer, so any protobuf client built from this .proto talks to the demo server:
 *
 *   message SayRequest  { string text = 1; }
 *   message EchoReply   { string text = 1; string pod = 2; uint32 seq = 3; }
 *   message CountRequest { uint32 count = 1; uint32 interval_ms = 2; }
 *   service Echo {
 *     rpc Say(SayRequest) returns (EchoReply);
 *     rpc Count(CountRequest) returns (stream EchoReply);
 *   }
 */
import { Buffer } from "node:buffer";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import {
  type ChannelCredentials,
  type Client,
  type ClientOptions,
  type ClientReadableStream,
  makeGenericClientConstructor,
} from "@grpc/grpc-js";

export interface SayRequest {
  text: string;
}

export interface EchoReply {
  text: string;
  pod: string;
  seq: number;
}

export interface CountRequest {
  count: number;
  intervalMs: number;
}

// Tags are (field number << 3) | wire type: 2 = length-delimited, 0 = varint.
const TAG_1_LEN = (1 << 3) | 2;
const TAG_2_LEN = (2 << 3) | 2;
const TAG_1_VARINT = 1 << 3;
const TAG_2_VARINT = 2 << 3;
const TAG_3_VARINT = 3 << 3;

function fields(bytes: Uint8Array, on: (tag: number, r: BinaryReader) => boolean): void {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (!on(tag, r)) r.skip(tag & 7);
  }
}

export function encodeSayRequest(m: SayRequest): Buffer {
  const w = new BinaryWriter();
  if (m.text !== "") w.uint32(TAG_1_LEN).string(m.text);
  return Buffer.from(w.finish());
}

export function decodeSayRequest(b: Uint8Array): SayRequest {
  const m: SayRequest = { text: "" };
  fields(b, (tag, r) => {
    if (tag !== TAG_1_LEN) return false;
    m.text = r.string();
    return true;
  });
  return m;
}

export function encodeEchoReply(m: EchoReply): Buffer {
  const w = new BinaryWriter();
  if (m.text !== "") w.uint32(TAG_1_LEN).string(m.text);
  if (m.pod !== "") w.uint32(TAG_2_LEN).string(m.pod);
  if (m.seq !== 0) w.uint32(TAG_3_VARINT).uint32(m.seq);
  return Buffer.from(w.finish());
}

export function decodeEchoReply(b: Uint8Array): EchoReply {
  const m: EchoReply = { text: "", pod: "", seq: 0 };
  fields(b, (tag, r) => {
    if (tag === TAG_1_LEN) m.text = r.string();
    else if (tag === TAG_2_LEN) m.pod = r.string();
    else if (tag === TAG_3_VARINT) m.seq = r.uint32();
    else return false;
    return true;
  });
  return m;
}

export function encodeCountRequest(m: CountRequest): Buffer {
  const w = new BinaryWriter();
  if (m.count !== 0) w.uint32(TAG_1_VARINT).uint32(m.count);
  if (m.intervalMs !== 0) w.uint32(TAG_2_VARINT).uint32(m.intervalMs);
  return Buffer.from(w.finish());
}

export function decodeCountRequest(b: Uint8Array): CountRequest {
  const m: CountRequest = { count: 0, intervalMs: 0 };
  fields(b, (tag, r) => {
    if (tag === TAG_1_VARINT) m.count = r.uint32();
    else if (tag === TAG_2_VARINT) m.intervalMs = r.uint32();
    else return false;
    return true;
  });
  return m;
}

export const ECHO_SERVICE_NAME = "weft.demo.Echo";

export const EchoService = {
  say: {
    path: `/${ECHO_SERVICE_NAME}/Say`,
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeSayRequest,
    requestDeserialize: decodeSayRequest,
    responseSerialize: encodeEchoReply,
    responseDeserialize: decodeEchoReply,
  },
  count: {
    path: `/${ECHO_SERVICE_NAME}/Count`,
    requestStream: false,
    responseStream: true,
    requestSerialize: encodeCountRequest,
    requestDeserialize: decodeCountRequest,
    responseSerialize: encodeEchoReply,
    responseDeserialize: decodeEchoReply,
  },
} as const;

/** The generic client, typed loosely: callers use `makeUnaryRequest`/`makeServerStreamRequest` through it. */
export const EchoClient = makeGenericClientConstructor(EchoService, ECHO_SERVICE_NAME) as unknown as {
  new (address: string, credentials: ChannelCredentials, options?: Partial<ClientOptions>): Client & {
    say(
      req: SayRequest,
      opts: { deadline: number },
      cb: (err: Error | null, res?: EchoReply) => void,
    ): unknown;
    count(req: CountRequest, opts: { deadline: number }): ClientReadableStream<EchoReply>;
  };
};
