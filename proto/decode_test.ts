/**
 * Hostile bytes: decoding truncated, mistagged, oversized or random input gives a
 * ProtoDecodeError naming the message type, never a hang or another kind of crash.
 */
import assert from "node:assert/strict";
import { decodeMessage, type Decoder, ProtoDecodeError } from "./decode.ts";
import { DestinationProfile, RequestMatch, Update } from "./gen/destination.ts";
import { CertifyRequest, CertifyResponse } from "./gen/identity.ts";
import { IPAddress } from "./gen/net.ts";

Deno.test("truncated, mistagged and over-long inputs are rejected with the type's name", () => {
  const cases: [string, Uint8Array][] = [
    ["varint cut short", new Uint8Array([0x08, 0xff])],
    ["length beyond end", new Uint8Array([0x0a, 0x10, 0x01])],
    ["fixed32 cut short", new Uint8Array([0x0d, 0x01, 0x02])],
    ["wire type 7", new Uint8Array([0x0f, 0x00])],
  ];
  for (const [why, bytes] of cases) {
    assert.throws(
      () => decodeMessage(Update, "io.linkerd.proxy.destination.Update", bytes),
      (e: unknown) =>
        e instanceof ProtoDecodeError &&
        /Cannot decode io\.linkerd\.proxy\.destination\.Update/.test(e.message),
      why,
    );
  }
});

Deno.test("deeply nested RequestMatch.not is refused instead of exhausting the stack", () => {
  // not (field 3) wrapping itself 10k times: each level adds a tag and a length prefix.
  let inner: number[] = [];
  for (let i = 0; i < 10_000; i++) {
    const len: number[] = [];
    let n = inner.length;
    do {
      len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
      n >>>= 7;
    } while (n > 0);
    inner = [0x1a, ...len, ...inner];
  }
  assert.throws(
    () => decodeMessage(RequestMatch, "io.linkerd.proxy.destination.RequestMatch", new Uint8Array(inner)),
    ProtoDecodeError,
  );
});

Deno.test("random bytes either decode or raise ProtoDecodeError, for every trust-boundary message", () => {
  // A fixed-seed generator keeps the run reproducible.
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  const targets: [string, Decoder<unknown>][] = [
    ["Update", Update],
    ["DestinationProfile", DestinationProfile],
    ["CertifyRequest", CertifyRequest],
    ["CertifyResponse", CertifyResponse],
    ["IPAddress", IPAddress],
  ];
  let decoded = 0, rejected = 0;
  for (let i = 0; i < 3000; i++) {
    const bytes = new Uint8Array(next() % 64);
    for (let j = 0; j < bytes.length; j++) bytes[j] = next() & 0xff;
    for (const [name, d] of targets) {
      try {
        decodeMessage(d, name, bytes);
        decoded++;
      } catch (e) {
        assert.ok(e instanceof ProtoDecodeError, `${name}: ${e}`);
        rejected++;
      }
    }
  }
  assert.ok(decoded > 0 && rejected > 0, `decoded ${decoded}, rejected ${rejected}`);
});
