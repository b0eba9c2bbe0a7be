/**
 * Golden wire tests: messages encode to bytes computed by hand from the protobuf encoding rules
 * (tag = field << 3 | wire type; varints little-endian base 128; fixed32/64 little-endian), and
 * the same bytes decode back.
 */
import assert from "node:assert/strict";
import { IPAddress, TcpAddress } from "./gen/net.ts";
import { Update } from "./gen/destination.ts";
import { CertifyRequest } from "./gen/identity.ts";
import { Header } from "./gen/transport_header.ts";
import {
  encodeTransportHeader,
  parseTransportHeader,
  TRANSPORT_HEADER_PREFACE,
} from "./transport_header_frame.ts";
import { fromIpAddress, toIpAddress } from "./ip.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");
const bytes = (...parts: (number | string | number[])[]) =>
  new Uint8Array(parts.flatMap((p) => typeof p === "string" ? Array.from(new TextEncoder().encode(p)) : p));

Deno.test("net.IPAddress 10.0.0.1 is field 1 fixed32 0x0A000001", () => {
  // tag 0x0d = field 1, wire type 5 (fixed32); value little-endian.
  const want = bytes(0x0d, [0x01, 0x00, 0x00, 0x0a]);
  const msg = toIpAddress("10.0.0.1");
  assert.deepEqual(msg, { ip: { $case: "ipv4", value: 0x0a000001 } });
  assert.equal(hex(IPAddress.encode(msg).finish()), hex(want));
  assert.deepEqual(IPAddress.decode(want), msg);
  assert.equal(fromIpAddress(IPAddress.decode(want)), "10.0.0.1");
});

Deno.test("net.IPAddress 2001:db8::1 is field 2 holding two fixed64 halves", () => {
  // IPv6 { first (0x09 fixed64) = 0x20010db800000000, last (0x11 fixed64) = 1 }, both little-endian.
  const v6 = bytes(0x09, [0x00, 0x00, 0x00, 0x00, 0xb8, 0x0d, 0x01, 0x20], 0x11, [1, 0, 0, 0, 0, 0, 0, 0]);
  const want = bytes(0x12, v6.length, Array.from(v6));
  const msg = toIpAddress("2001:db8::1");
  assert.deepEqual(msg, { ip: { $case: "ipv6", value: { first: 0x20010db800000000n, last: 1n } } });
  assert.equal(hex(IPAddress.encode(msg).finish()), hex(want));
  assert.deepEqual(IPAddress.decode(want), msg);
  assert.equal(fromIpAddress(IPAddress.decode(want)), "2001:db8::1");
});

Deno.test("net.IPAddress keeps the high bit of both IPv6 halves", () => {
  const msg = toIpAddress("ffff:ffff:ffff:ffff:8000::1");
  const back = IPAddress.decode(IPAddress.encode(msg).finish());
  assert.equal(fromIpAddress(back), "ffff:ffff:ffff:ffff:8000::1");
});

Deno.test("destination.Update with one add encodes as computed by hand", () => {
  const tcp = bytes(0x0a, 0x05, 0x0d, [0x01, 0x00, 0x00, 0x0a], 0x10, [0x90, 0x3f]); // ip, port 8080
  const addr = bytes(0x0a, tcp.length, Array.from(tcp), 0x18, [0x90, 0x4e]); // addr, weight (field 3) 10000
  const entry = bytes(0x0a, 0x02, "ns", 0x12, 0x01, "a"); // map entry {key: "ns", value: "a"}
  const set = bytes(0x0a, addr.length, Array.from(addr), 0x12, entry.length, Array.from(entry));
  const want = bytes(0x0a, set.length, Array.from(set)); // Update.add = field 1
  const msg: Update = {
    update: {
      $case: "add",
      value: {
        addrs: [{
          addr: { ip: toIpAddress("10.0.0.1"), port: 8080 },
          weight: 10000,
          metricLabels: {},
        }],
        metricLabels: { ns: "a" },
      },
    },
  };
  assert.equal(hex(Update.encode(msg).finish()), hex(want));
  const back = Update.decode(want);
  assert.equal(back.update?.$case, "add");
  if (back.update?.$case !== "add") return;
  assert.equal(back.update.value.addrs.length, 1);
  assert.equal(back.update.value.addrs[0].weight, 10000);
  assert.deepEqual(back.update.value.addrs[0].addr, TcpAddress.decode(tcp));
  assert.deepEqual(back.update.value.metricLabels, { ns: "a" });
});

Deno.test("destination.Update no_endpoints{exists:true} is field 3", () => {
  const want = bytes(0x1a, 0x02, 0x08, 0x01);
  assert.equal(
    hex(Update.encode({ update: { $case: "noEndpoints", value: { exists: true } } }).finish()),
    hex(want),
  );
  assert.deepEqual(Update.decode(want).update, { $case: "noEndpoints", value: { exists: true } });
});

Deno.test("identity.CertifyRequest encodes identity, token and CSR as fields 1-3", () => {
  const want = bytes(0x0a, 0x03, "a.b", 0x12, 0x02, [0x01, 0x02], 0x1a, 0x01, [0x03]);
  const msg: CertifyRequest = {
    identity: "a.b",
    token: new Uint8Array([1, 2]),
    certificateSigningRequest: new Uint8Array([3]),
  };
  assert.equal(hex(CertifyRequest.encode(msg).finish()), hex(want));
  assert.deepEqual(CertifyRequest.decode(want), msg);
});

Deno.test("transport header frame: preface, u32 big-endian length, Header", () => {
  // Header { port (1) = 8080, session_protocol (3) = { http1 (1) = {} } }.
  const body = bytes(0x08, [0x90, 0x3f], 0x1a, 0x02, 0x0a, 0x00);
  const want = bytes("transport.l5d.io/v1\r\n\r\n", [0, 0, 0, body.length], Array.from(body));
  assert.equal(TRANSPORT_HEADER_PREFACE.length, 23);
  const header: Header = {
    port: 8080,
    name: "",
    sessionProtocol: { kind: { $case: "http1", value: {} } },
    forwardedClientId: "",
  };
  assert.equal(hex(encodeTransportHeader(header)), hex(want));
  const parsed = parseTransportHeader(bytes(Array.from(want), "app bytes"));
  assert.equal(parsed.kind, "complete");
  if (parsed.kind !== "complete") return;
  assert.equal(parsed.consumed, want.length);
  assert.deepEqual(parsed.header, header);
});

Deno.test("transport header parsing asks for more bytes until the frame is complete", () => {
  const frame = encodeTransportHeader({ port: 80, name: "", sessionProtocol: undefined });
  for (let n = 0; n < frame.length; n++) {
    const r = parseTransportHeader(frame.subarray(0, n));
    assert.equal(r.kind, "incomplete", `prefix of ${n} bytes`);
  }
  assert.equal(parseTransportHeader(frame).kind, "complete");
});

Deno.test("transport header rejects a wrong preface, a huge length and port 0", () => {
  assert.throws(() => parseTransportHeader(bytes("GET / HTTP/1.1\r\n")), /preface/);
  assert.throws(
    () => parseTransportHeader(bytes("transport.l5d.io/v1\r\n\r\n", [0x7f, 0xff, 0xff, 0xff])),
    /exceeds/,
  );
  const zero = bytes("transport.l5d.io/v1\r\n\r\n", [0, 0, 0, 0]);
  assert.throws(() => parseTransportHeader(zero), /port 0 is not in 1\.\.65535/);
  const bad = bytes("transport.l5d.io/v1\r\n\r\n", [0, 0, 0, 2], [0x0a, 0x05]);
  assert.throws(() => parseTransportHeader(bad), /Cannot decode transport\.l5d\.io\.Header/);
});

Deno.test("transport header: weft's forwarded_client_id is field 100, and absent unless set", () => {
  const id = "web.shop.serviceaccount.identity.weft.cluster.local";
  const frame = encodeTransportHeader({
    port: 80,
    name: "",
    sessionProtocol: undefined,
    forwardedClientId: id,
  });
  // Header { port (1) = 80, forwarded_client_id (100, wire type 2: tag 802 = a2 06) = id }.
  const body = bytes(0x08, 80, [0xa2, 0x06, id.length], id);
  assert.equal(hex(frame.subarray(TRANSPORT_HEADER_PREFACE.length + 4)), hex(body));
  const parsed = parseTransportHeader(frame);
  assert.ok(parsed.kind === "complete" && parsed.header.forwardedClientId === id);
  const plain = encodeTransportHeader({ port: 80, name: "", sessionProtocol: undefined });
  assert.equal(hex(plain.subarray(TRANSPORT_HEADER_PREFACE.length + 4)), hex(bytes(0x08, 80)));
});
