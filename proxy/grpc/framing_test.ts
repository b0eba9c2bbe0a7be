import assert from "node:assert/strict";
import { frameMessage, GrpcFramingError, MessageDecoder } from "./framing.ts";
import { Status } from "./status.ts";

const bytes = (...n: number[]) => new Uint8Array(n);

Deno.test("framing: a message is a zero flag, a big-endian length and the bytes", () => {
  assert.deepEqual(frameMessage(bytes(7, 8, 9)), bytes(0, 0, 0, 0, 3, 7, 8, 9));
  assert.deepEqual(frameMessage(bytes()), bytes(0, 0, 0, 0, 0));
});

Deno.test("framing: messages split across chunks at every offset, several per chunk, empty ones", () => {
  const msgs = [bytes(1, 2, 3), bytes(), new Uint8Array(300).fill(5), bytes(9)];
  const wire = new Uint8Array(msgs.reduce((n, m) => n + m.length + 5, 0));
  let at = 0;
  for (const m of msgs) {
    wire.set(frameMessage(m), at);
    at += m.length + 5;
  }
  for (const size of [1, 2, 4, 5, 6, 7, 64, wire.length]) {
    const d = new MessageDecoder();
    const got: Uint8Array[] = [];
    for (let i = 0; i < wire.length; i += size) {
      // Copies of the views, and the source chunk overwritten after each push: nothing kept may alias it.
      const chunk = wire.slice(i, i + size);
      for (const m of d.push(chunk)) got.push(m.slice());
      chunk.fill(0xee);
    }
    d.end();
    assert.deepEqual(got, msgs, `chunk size ${size}`);
  }
});

Deno.test("framing: a compressed message is refused, the client asked for none", () => {
  const d = new MessageDecoder();
  assert.throws(
    () => d.push(bytes(1, 0, 0, 0, 1, 42)),
    (e) =>
      e instanceof GrpcFramingError && e.code === Status.INTERNAL && /compressed message/.test(e.message),
  );
  assert.throws(() => new MessageDecoder().push(bytes(0x80, 0, 0, 0, 0)), /flag byte 128 is invalid/);
});

Deno.test("framing: a length over the limit is refused from the prefix alone", () => {
  const d = new MessageDecoder(1024);
  // Only the prefix arrives (split, too): nothing of the claimed 4 GiB - 1 is waited for.
  d.push(bytes(0, 0xff));
  assert.throws(
    () => d.push(bytes(0xff, 0xff, 0xff)),
    (e) =>
      e instanceof GrpcFramingError && e.code === Status.RESOURCE_EXHAUSTED &&
      e.message.includes("4294967295 bytes, over this client's limit of 1024"),
  );
  const ok = new MessageDecoder(3);
  assert.deepEqual(ok.push(frameMessage(bytes(1, 2, 3))), [bytes(1, 2, 3)]);
});

Deno.test("framing: a body that ends inside a prefix or a message is an error", () => {
  const a = new MessageDecoder();
  a.push(bytes(0, 0, 0));
  assert.throws(() => a.end(), /ended inside a message \(3 of a message's 5 prefix bytes\)/);
  const b = new MessageDecoder();
  b.push(bytes(0, 0, 0, 0, 10, 1, 2));
  assert.throws(() => b.end(), /ended inside a message \(2 of a 10-byte message\)/);
  const c = new MessageDecoder();
  c.push(frameMessage(bytes(1)));
  c.end();
});
