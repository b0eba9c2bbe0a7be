import assert from "node:assert/strict";
import { EMPTY_BODY, HeaderList, type HttpRequest } from "./message.ts";
import { markUpgraded, ORIG_PROTO_HEADER, takeOrigProto } from "./orig_proto.ts";
import { CLIENT_ID_HEADER, setClientId } from "./client_id_header.ts";

function req(version: HttpRequest["version"], headers: string[] = []): HttpRequest {
  return {
    method: "GET",
    scheme: undefined,
    authority: "web.demo:80",
    path: "/",
    version,
    headers: new HeaderList(headers),
    body: EMPTY_BODY,
  };
}

Deno.test("orig-proto: an upgraded HTTP/1.1 request is restored to HTTP/1.1 and the marker removed", () => {
  const r = req("HTTP/1.1");
  markUpgraded(r);
  assert.equal(r.headers.get(ORIG_PROTO_HEADER), "HTTP/1.1");
  const over = { ...r, version: "HTTP/2" as const };
  assert.equal(takeOrigProto(over), "HTTP/1.1");
  assert.equal(over.headers.has(ORIG_PROTO_HEADER), false);
});

Deno.test("orig-proto: native HTTP/2 is left alone; unknown values and HTTP/1 input are stripped", () => {
  assert.equal(takeOrigProto(req("HTTP/2")), undefined);
  const odd = req("HTTP/2", [ORIG_PROTO_HEADER, "SPDY/3"]);
  assert.equal(takeOrigProto(odd), undefined);
  assert.equal(odd.headers.has(ORIG_PROTO_HEADER), false);
  const h1 = req("HTTP/1.1", [ORIG_PROTO_HEADER, "HTTP/1.0"]);
  assert.equal(takeOrigProto(h1), undefined);
  assert.equal(h1.headers.has(ORIG_PROTO_HEADER), false);
  assert.equal(takeOrigProto(req("HTTP/2", [ORIG_PROTO_HEADER, "HTTP/1.0; absolute-form"])), "HTTP/1.0");
});

Deno.test("l5d-client-id: a forged value is always removed, and set only for an authenticated client", () => {
  const forged = new HeaderList([CLIENT_ID_HEADER, "admin.weft.serviceaccount.identity.weft.cluster.local"]);
  setClientId(forged, undefined);
  assert.equal(forged.has(CLIENT_ID_HEADER), false);
  const h = new HeaderList([CLIENT_ID_HEADER, "forged", CLIENT_ID_HEADER, "twice"]);
  setClientId(h, "web.demo.serviceaccount.identity.weft.cluster.local");
  assert.deepEqual(h.getAll(CLIENT_ID_HEADER), ["web.demo.serviceaccount.identity.weft.cluster.local"]);
});
