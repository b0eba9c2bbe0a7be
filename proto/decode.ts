/**
 * Decoding of untrusted protobuf bytes. The generated decoders throw low-level errors (or
 * RangeErrors from DataView); callers at a trust boundary use this to get one error type with a
 * message naming the message type.
 */
import type { BinaryReader } from "@bufbuild/protobuf/wire";

export interface Decoder<T> {
  decode(input: BinaryReader | Uint8Array, length?: number): T;
}

export class ProtoDecodeError extends Error {
  override name = "ProtoDecodeError";
}

/** Decodes `bytes` as `typeName`, turning any failure into a ProtoDecodeError. */
export function decodeMessage<T>(decoder: Decoder<T>, typeName: string, bytes: Uint8Array): T {
  try {
    return decoder.decode(bytes);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw new ProtoDecodeError(`Cannot decode ${typeName} from ${bytes.length} bytes: ${why}`);
  }
}
