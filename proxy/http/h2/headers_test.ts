import assert from "node:assert/strict";
import { HeaderList } from "../message.ts";
import {
  appendSendable,
  parseRequestHead,
  parseResponseHead,
  sendableTrailers,
  trailersFromRaw,
} from "./headers.ts";

Deno.test("parseRequestHead: pseudo-headers to fields, te dropped, cookies joined, sizes counted", () => {
  const raw = [
    ":method",
    "POST",
    ":scheme",
    "https",
    ":authority",
    "svc:8080",
    ":path",
    "/a?b",
    "cookie",
    "a=1",
    "x-k",
    "v",
    "te",
    "trailers",
    "cookie",
    "b=2",
    "content-length",
    "12",
  ];
  let size = 0;
  for (let i = 0; i < raw.length; i += 2) size += raw[i].length + raw[i + 1].length + 32;
  const h = parseRequestHead(raw);
  assert.equal(h.headers.raw, raw, "the decoder's array is reused, not copied");
  assert.equal(h.method, "POST");
  assert.equal(h.scheme, "https");
  assert.equal(h.authority, "svc:8080");
  assert.equal(h.path, "/a?b");
  assert.deepEqual(h.headers.raw, ["cookie", "a=1; b=2", "x-k", "v", "content-length", "12"]);
  assert.equal(h.contentLength, 12);
  assert.equal(h.listSize, size);
});

Deno.test("parseRequestHead: host fills in a missing :authority and never stays in the list", () => {
  const h = parseRequestHead([":method", "GET", ":scheme", "http", ":path", "/", "host", "h.example"]);
  assert.equal(h.authority, "h.example");
  assert.equal(h.headers.has("host"), false);
  assert.equal(parseRequestHead([":method", "GET", ":path", "/"]).authority, "");
  assert.equal(
    parseRequestHead([":method", "GET", ":path", "/", "content-length", "1x"]).contentLength,
    undefined,
  );
});

Deno.test("appendSendable: connection-specific fields, host and pseudo-headers never go out", () => {
  const out: string[] = [":status", "200"];
  const te = appendSendable(
    out,
    new HeaderList([
      "connection",
      "close",
      "keep-alive",
      "5",
      "proxy-connection",
      "x",
      "transfer-encoding",
      "chunked",
      "upgrade",
      "h2c",
      "http2-settings",
      "AA",
      "host",
      "h",
      ":path",
      "/",
      "te",
      "gzip",
      "x-a",
      "1",
      "x-a",
      "2",
    ]),
  );
  assert.deepEqual(out, [":status", "200", "x-a", "1", "x-a", "2"]);
  assert.equal(te, false);
  const out2: string[] = [];
  assert.equal(appendSendable(out2, new HeaderList(["te", "Trailers"])), true, "te: trailers is allowed");
});

Deno.test("trailers: repeated names become arrays going out, raw arrays coming in", () => {
  assert.deepEqual(
    sendableTrailers(new HeaderList(["grpc-status", "0", "x", "1", "x", "2", "connection", "c"])),
    {
      "grpc-status": "0",
      x: ["1", "2"],
    },
  );
  assert.deepEqual(trailersFromRaw(["grpc-status", "0", ":bad", "1"], {}).raw, ["grpc-status", "0"]);
  assert.deepEqual(trailersFromRaw(undefined, { "grpc-status": "13", x: ["a", "b"] }).raw, [
    "grpc-status",
    "13",
    "x",
    "a",
    "x",
    "b",
  ]);
  const r = parseResponseHead([":status", "404", "content-length", "0", "x", "y"]);
  assert.equal(r.status, 404);
  assert.equal(r.contentLength, 0);
  assert.deepEqual(r.headers.raw, ["content-length", "0", "x", "y"]);
});
