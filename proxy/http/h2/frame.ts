/**
 * HTTP/2 frame layout (RFC 9113 §4, §6): type, flag, error-code and setting numbers, the 9-byte
 * frame header, and builders for the frames the session writes. Builders return one Uint8Array
 * per frame (header and payload together) so the session can queue and send them without
 * further copies.
 */

export const PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

const CODE_NAMES = Object.fromEntries(Object.entries(ErrorCode).map(([k, v]) => [v, k]));

/** "REFUSED_STREAM", or the number for codes RFC 9113 does not define. */
export function errorCodeName(code: number): string {
  return CODE_NAMES[code] ?? `0x${code.toString(16)}`;
}

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

export const FRAME_HEADER_SIZE = 9;
export const DEFAULT_WINDOW = 65_535;
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
export const MAX_WINDOW = 2 ** 31 - 1;

/** Writes a frame header into `b` at 0 and returns `b`. */
function putHeader(b: Uint8Array, length: number, type: number, flags: number, streamId: number): Uint8Array {
  b[0] = length >>> 16;
  b[1] = (length >>> 8) & 0xff;
  b[2] = length & 0xff;
  b[3] = type;
  b[4] = flags;
  b[5] = (streamId >>> 24) & 0x7f;
  b[6] = (streamId >>> 16) & 0xff;
  b[7] = (streamId >>> 8) & 0xff;
  b[8] = streamId & 0xff;
  return b;
}

/** A frame with a payload copied in after the header. */
export function frameWith(type: number, flags: number, streamId: number, payload: Uint8Array): Uint8Array {
  const b = new Uint8Array(FRAME_HEADER_SIZE + payload.length);
  putHeader(b, payload.length, type, flags, streamId);
  b.set(payload, FRAME_HEADER_SIZE);
  return b;
}

/** Just the 9-byte header, for a payload sent as its own piece (large DATA). */
export function frameHeader(length: number, type: number, flags: number, streamId: number): Uint8Array {
  return putHeader(new Uint8Array(FRAME_HEADER_SIZE), length, type, flags, streamId);
}

function put32(b: Uint8Array, at: number, v: number): void {
  b[at] = v >>> 24;
  b[at + 1] = (v >>> 16) & 0xff;
  b[at + 2] = (v >>> 8) & 0xff;
  b[at + 3] = v & 0xff;
}

export function read32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
}

export function settingsFrame(values: [number, number][]): Uint8Array {
  const b = new Uint8Array(FRAME_HEADER_SIZE + values.length * 6);
  putHeader(b, values.length * 6, FrameType.SETTINGS, 0, 0);
  let at = FRAME_HEADER_SIZE;
  for (const [id, v] of values) {
    b[at] = id >>> 8;
    b[at + 1] = id & 0xff;
    put32(b, at + 2, v);
    at += 6;
  }
  return b;
}

export const SETTINGS_ACK = putHeader(new Uint8Array(FRAME_HEADER_SIZE), 0, FrameType.SETTINGS, Flag.ACK, 0);

export function windowUpdateFrame(streamId: number, increment: number): Uint8Array {
  const b = new Uint8Array(FRAME_HEADER_SIZE + 4);
  putHeader(b, 4, FrameType.WINDOW_UPDATE, 0, streamId);
  put32(b, FRAME_HEADER_SIZE, increment & 0x7fffffff);
  return b;
}

export function rstStreamFrame(streamId: number, code: number): Uint8Array {
  const b = new Uint8Array(FRAME_HEADER_SIZE + 4);
  putHeader(b, 4, FrameType.RST_STREAM, 0, streamId);
  put32(b, FRAME_HEADER_SIZE, code);
  return b;
}

export function pingFrame(opaque: Uint8Array, ack: boolean): Uint8Array {
  const b = new Uint8Array(FRAME_HEADER_SIZE + 8);
  putHeader(b, 8, FrameType.PING, ack ? Flag.ACK : 0, 0);
  b.set(opaque.subarray(0, 8), FRAME_HEADER_SIZE);
  return b;
}

const encoder = new TextEncoder();

export function goawayFrame(lastStreamId: number, code: number, debug = ""): Uint8Array {
  const d = encoder.encode(debug);
  const b = new Uint8Array(FRAME_HEADER_SIZE + 8 + d.length);
  putHeader(b, 8 + d.length, FrameType.GOAWAY, 0, 0);
  put32(b, FRAME_HEADER_SIZE, lastStreamId & 0x7fffffff);
  put32(b, FRAME_HEADER_SIZE + 4, code);
  b.set(d, FRAME_HEADER_SIZE + 8);
  return b;
}
