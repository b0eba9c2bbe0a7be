import assert from "node:assert/strict";
import { EMPTY_BODY, HeaderList, type HttpRequest } from "../message.ts";
import { FRAME_CHUNKED, FRAME_LENGTH, FRAME_NONE, requestHead, responseHead } from "./write.ts";

const latin1 = (b: Uint8Array) => String.fromCharCode(...b);

Deno.test("responseHead: status line, end-to-end fields, framing and connection as bytes", () => {
  const h = new HeaderList([
    "content-type",
    "text/plain",
    "x-obs",
    "caf\xe9",
    "connection",
    "x",
    "host",
    "h",
  ]);
  assert.equal(
    latin1(responseHead(200, h, FRAME_LENGTH, 1234567890123, "keep-alive")),
    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-obs: caf\xe9\r\n" +
      "content-length: 1234567890123\r\nconnection: keep-alive\r\n\r\n",
  );
  assert.equal(
    latin1(responseHead(599, new HeaderList(), FRAME_CHUNKED, 0, "close")),
    "HTTP/1.1 599 Unknown\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
  );
  // HEAD/304 (FRAME_NONE) keep the representation's Content-Length; 204 drops it.
  const cl = new HeaderList(["content-length", "0"]);
  assert.equal(
    latin1(responseHead(304, cl, FRAME_NONE, 0, undefined)),
    "HTTP/1.1 304 Not Modified\r\ncontent-length: 0\r\n\r\n",
  );
  assert.equal(latin1(responseHead(204, cl, FRAME_NONE, 0, undefined)), "HTTP/1.1 204 No Content\r\n\r\n");
  assert.equal(
    latin1(responseHead(101, new HeaderList(), FRAME_NONE, 0, undefined, "websocket")),
    "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n",
  );
  // `room` bytes follow the head, which is unchanged.
  const roomy = responseHead(200, new HeaderList(), FRAME_LENGTH, 5, undefined, undefined, 5);
  assert.equal(roomy.length, "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n".length + 5);
  assert.equal(latin1(roomy.subarray(0, roomy.length - 5)), "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n");
});

Deno.test("responseHead and requestHead refuse what cannot go on the wire, naming it", () => {
  const bad: [HeaderList, RegExp][] = [
    [
      new HeaderList(["x", "a\r\nx-injected: 1"]),
      /cannot write header "x": value has CR, LF, NUL or non-latin1/,
    ],
    [new HeaderList(["x", "\u0100"]), /non-latin1/],
    [new HeaderList(["bad name", "v"]), /invalid name "bad name"/],
  ];
  for (const [h, re] of bad) {
    assert.throws(() => responseHead(200, h, FRAME_LENGTH, 0, undefined), re);
  }
  assert.throws(() => responseHead(1000, new HeaderList(), FRAME_NONE, 0, undefined), /invalid status 1000/);
  const req = (over: Partial<HttpRequest>): HttpRequest => ({
    method: "GET",
    scheme: undefined,
    authority: "a",
    path: "/",
    version: "HTTP/1.1",
    headers: new HeaderList(),
    body: EMPTY_BODY,
    ...over,
  });
  assert.throws(() => requestHead(req({ path: "/a b" }), FRAME_NONE, 0), /invalid path/);
  assert.throws(() => requestHead(req({ method: "GE T" }), FRAME_NONE, 0), /invalid method/);
  assert.throws(() => requestHead(req({ authority: "a\nb" }), FRAME_NONE, 0), /invalid authority/);
});

Deno.test("requestHead: origin form, host, fields, framing, upgrade and te", () => {
  const req: HttpRequest = {
    method: "POST",
    scheme: undefined,
    authority: "svc:8080",
    path: "",
    version: "HTTP/1.1",
    headers: new HeaderList(["x-a", "1", "te", "trailers", "upgrade", "websocket", "content-length", "9"]),
    body: EMPTY_BODY,
  };
  assert.equal(
    latin1(requestHead(req, FRAME_LENGTH, 42)),
    "POST / HTTP/1.1\r\nhost: svc:8080\r\nx-a: 1\r\ncontent-length: 42\r\n" +
      "upgrade: websocket\r\nte: trailers\r\nconnection: upgrade, te\r\n\r\n",
  );
  req.headers = new HeaderList(["te", "trailers"]);
  assert.equal(
    latin1(requestHead(req, FRAME_CHUNKED, 0)),
    "POST / HTTP/1.1\r\nhost: svc:8080\r\ntransfer-encoding: chunked\r\nte: trailers\r\nconnection: te\r\n\r\n",
  );
});
