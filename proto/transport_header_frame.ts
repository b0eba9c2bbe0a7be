/**
 * Framing of the transport header that a client proxy writes first on a mesh TLS connection
 * negotiated with ALPN `transport.l5d.io/v1`: the preface, a u32 big-endian length, then a
 * protobuf `Header` naming the real target port (and, for gateways, the target name; a weft
 * gateway adds the identity of the client it forwards for in field 100).
 */
import { Header } from "./gen_messages/transport_header.ts";
import { decodeMessage } from "./decode.ts";

/** The decoded header, for code outside proto/ (which does not import generated code). */
export type TransportHeader = Header;

export const TRANSPORT_HEADER_ALPN = "transport.l5d.io/v1";
export const TRANSPORT_HEADER_PREFACE: Uint8Array = new TextEncoder().encode("transport.l5d.io/v1\r\n\r\n");

/** Larger headers are refused: a real one is a few bytes, so anything big is hostile or broken. */
export const MAX_TRANSPORT_HEADER_LENGTH = 64 * 1024;

export class TransportHeaderError extends Error {
  override name = "TransportHeaderError";
}

/** A header to send; `forwardedClientId` (weft's extension) is only for gateways. */
export type HeaderFields = Omit<Header, "forwardedClientId"> & { forwardedClientId?: string };

export function encodeTransportHeader(fields: HeaderFields): Uint8Array {
  const header: Header = { ...fields, forwardedClientId: fields.forwardedClientId ?? "" };
  const body = Header.encode(header).finish();
  const out = new Uint8Array(TRANSPORT_HEADER_PREFACE.length + 4 + body.length);
  out.set(TRANSPORT_HEADER_PREFACE, 0);
  new DataView(out.buffer).setUint32(TRANSPORT_HEADER_PREFACE.length, body.length);
  out.set(body, TRANSPORT_HEADER_PREFACE.length + 4);
  return out;
}

export type TransportHeaderParse =
  | { kind: "incomplete"; need: number }
  | { kind: "complete"; header: Header; consumed: number };

/**
 * Parses a transport header from the start of `buf`. Returns how many more bytes are needed when
 * `buf` is short; throws TransportHeaderError when the bytes cannot be a valid header.
 */
export function parseTransportHeader(buf: Uint8Array): TransportHeaderParse {
  const pre = TRANSPORT_HEADER_PREFACE;
  const have = Math.min(buf.length, pre.length);
  for (let i = 0; i < have; i++) {
    if (buf[i] !== pre[i]) {
      throw new TransportHeaderError("connection does not start with the transport header preface");
    }
  }
  if (buf.length < pre.length + 4) return { kind: "incomplete", need: pre.length + 4 - buf.length };
  const len = new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(pre.length);
  if (len > MAX_TRANSPORT_HEADER_LENGTH) {
    throw new TransportHeaderError(`transport header length ${len} exceeds ${MAX_TRANSPORT_HEADER_LENGTH}`);
  }
  const end = pre.length + 4 + len;
  if (buf.length < end) return { kind: "incomplete", need: end - buf.length };
  let header: Header;
  try {
    header = decodeMessage(Header, "transport.l5d.io.Header", buf.subarray(pre.length + 4, end));
  } catch (e) {
    throw new TransportHeaderError((e as Error).message);
  }
  if (!Number.isInteger(header.port) || header.port < 1 || header.port > 65535) {
    throw new TransportHeaderError(`transport header port ${header.port} is not in 1..65535`);
  }
  return { kind: "complete", header, consumed: end };
}
