import assert from "node:assert/strict";
import { checkRequest, checkResponse, checkTrailers } from "./validate.ts";

const REQ = [":method", "GET", ":scheme", "https", ":path", "/a?b", ":authority", "x.y:80"];

Deno.test("checkRequest: a well-formed request head passes", () => {
  assert.equal(checkRequest([...REQ, "accept", "*/*", "te", "trailers", "x-empty", ""]), undefined);
  assert.equal(checkRequest([":method", "CONNECT", ":authority", "x:443"]), undefined);
});

Deno.test("checkRequest: each malformation is named", () => {
  const cases: [string[], RegExp][] = [
    [[":scheme", "http", ":path", "/"], /missing :method/],
    [[":method", "GET", ":path", "/"], /missing :scheme/],
    [[":method", "GET", ":scheme", "http", ":path", ""], /missing :path/],
    [[...REQ, ":method", "POST"], /repeated :method|pseudo-header :method after/],
    [[":method", "GET", ":method", "POST", ":scheme", "http", ":path", "/"], /repeated :method/],
    [[...REQ.slice(0, 2), "x-a", "1", ...REQ.slice(2)], /pseudo-header :scheme after regular fields/],
    [[...REQ, ":bogus", "1"], /unknown pseudo-header :bogus/],
    [[":bogus", "1", ...REQ], /unknown pseudo-header :bogus/],
    [[...REQ, "X-Upper", "1"], /invalid field name "X-Upper"/],
    [[...REQ, "bad name", "1"], /invalid field name/],
    [[...REQ, "x-a", "a\r\nb"], /invalid value for field x-a/],
    [[...REQ, "x-a", " padded"], /invalid value for field x-a/],
    [[...REQ, "x-a", "nul\0"], /invalid value/],
    [[...REQ, "connection", "keep-alive"], /connection-specific field connection/],
    [[...REQ, "transfer-encoding", "chunked"], /connection-specific field transfer-encoding/],
    [[...REQ, "te", "gzip"], /connection-specific field te/],
    [[":method", "CONNECT", ":authority", "x:1", ":path", "/"], /CONNECT with :scheme or :path/],
    [[":method", "CONNECT"], /CONNECT without :authority/],
  ];
  for (const [raw, want] of cases) assert.match(checkRequest(raw) ?? "passed", want, JSON.stringify(raw));
});

Deno.test("checkResponse and checkTrailers", () => {
  assert.equal(checkResponse([":status", "204", "x-a", "1"]), undefined);
  assert.match(checkResponse(["x-a", "1"]) ?? "", /missing :status/);
  assert.match(checkResponse([":status", "20"]) ?? "", /invalid :status "20"/);
  assert.match(checkResponse([":status", "200", ":status", "200"]) ?? "", /repeated :status/);
  assert.match(checkResponse([":status", "200", ":path", "/"]) ?? "", /unknown pseudo-header :path/);
  assert.match(checkResponse([":status", "200", "Upper", "1"]) ?? "", /invalid field name/);
  assert.equal(checkTrailers(["grpc-status", "0", "grpc-message", ""]), undefined);
  assert.match(checkTrailers([":status", "200"]) ?? "", /pseudo-header :status/);
});
