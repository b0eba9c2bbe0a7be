/** The send queue: bytes out in order, payloads by reference kept in place, the stage reused safely. */
import assert from "node:assert/strict";
import { FrameOut } from "./frame_out.ts";
import { FrameType, frameWith, windowUpdateFrame } from "./frame.ts";

function bytes(n: number, fill: number): Uint8Array {
  return new Uint8Array(n).fill(fill);
}

Deno.test("FrameOut: staged headers, copies and whole frames come out in order, byte for byte", () => {
  const out = new FrameOut();
  const block = bytes(100, 7);
  out.header(40, FrameType.HEADERS, 0x4, 3);
  out.copy(block, 10, 50); // 40 octets: the loop path
  out.header(90, FrameType.DATA, 0x1, 3);
  out.copy(block, 5, 95); // 90 octets: the set() path
  out.windowUpdate(5, 1000);
  const expected = [
    ...frameWith(FrameType.HEADERS, 0x4, 3, block.subarray(10, 50)),
    ...frameWith(FrameType.DATA, 0x1, 3, block.subarray(5, 95)),
    ...windowUpdateFrame(5, 1000),
  ];
  assert.deepStrictEqual(out.bytes, expected.length);
  assert.deepStrictEqual([...out.take()!], expected);
  assert.deepStrictEqual(out.bytes, 0);
  assert.deepStrictEqual(out.take(), undefined);
});

Deno.test("FrameOut: a large payload kept by reference stays between the staged bytes around it", () => {
  const out = new FrameOut();
  const big = bytes(10_000, 9);
  out.header(9000, FrameType.DATA, 0, 1);
  out.payload(big, 500, 9500);
  out.header(0, FrameType.DATA, 0x1, 1);
  const taken = out.take()!;
  assert.deepStrictEqual(
    [...taken],
    [
      ...frameWith(FrameType.DATA, 0, 1, big.subarray(500, 9500)),
      ...frameWith(FrameType.DATA, 0x1, 1, bytes(0, 0)),
    ],
  );
  // Only a payload: handed out as it is, without a copy.
  out.payload(big, 0, big.length);
  assert.deepStrictEqual(out.take(), big);
});

Deno.test("FrameOut: the stage grows for a large block; what is taken is a copy the queue no longer writes into", () => {
  const out = new FrameOut();
  const block = bytes(40_000, 3);
  out.header(block.length, FrameType.HEADERS, 0x4, 1);
  out.copy(block, 0, block.length);
  const first = out.take()!;
  assert.deepStrictEqual(first.length, 9 + block.length);
  out.frame(frameWith(FrameType.PING, 0, 0, bytes(8, 1)));
  const second = out.take()!;
  assert.deepStrictEqual(second.length, 17);
  assert.deepStrictEqual(first[9], 3); // not overwritten by the later frame
  out.frame(frameWith(FrameType.PING, 0, 0, bytes(8, 1)));
  out.clear();
  assert.deepStrictEqual(out.take(), undefined);
});
