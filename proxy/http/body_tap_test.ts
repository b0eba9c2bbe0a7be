import assert from "node:assert/strict";
import { BodyTap } from "./body_tap.ts";
import { type Body, bytesBody, HeaderList } from "./message.ts";

/** Writes down each hook call in order. */
class Log extends BodyTap {
  readonly seen: string[] = [];
  protected onChunk(): void {
    this.seen.push("chunk");
  }
  protected onEnd(trailers: HeaderList | undefined): void {
    this.seen.push(`end ${trailers?.get("grpc-status") ?? "-"}`);
  }
  protected onError(e: unknown): void {
    this.seen.push(`error ${(e as Error).message}`);
  }
  protected onCancel(): void {
    this.seen.push("cancel");
  }
}

const bytes = (s: string) => new TextEncoder().encode(s);

Deno.test("BodyTap passes chunks, length and trailers through and sees each chunk and the end", async () => {
  const b = new Log(bytesBody([bytes("a"), bytes("b")], new HeaderList(["grpc-status", "0"])));
  assert.equal(new TextDecoder().decode((await b.read())!), "a");
  assert.equal(new TextDecoder().decode(b.readNow()!), "b");
  assert.equal(await b.read(), null);
  assert.equal(b.trailers?.get("grpc-status"), "0");
  assert.deepEqual(b.seen, ["chunk", "chunk", "end 0"]);
  assert.equal(new Log(bytesBody([bytes("abc")])).length, 3);
});

Deno.test("BodyTap reports a failed read and rethrows it, and a cancel before passing it on", async () => {
  let cancelled: Error | undefined;
  const failing: Body = {
    length: undefined,
    trailers: undefined,
    read: () => Promise.reject(new Error("stream reset")),
    readNow: () => {
      throw new Error("stream reset now");
    },
    cancel: (r) => cancelled = r,
  };
  const b = new Log(failing);
  await assert.rejects(() => b.read(), /stream reset/);
  assert.throws(() => b.readNow(), /stream reset now/);
  b.cancel(new Error("reader gone"));
  assert.deepEqual(b.seen, ["error stream reset", "error stream reset now", "cancel"]);
  assert.equal(cancelled?.message, "reader gone");
});

Deno.test("BodyTap's readNow says undefined (nothing buffered) without calling a hook", () => {
  const b = new Log({ ...bytesBody([]), readNow: () => undefined });
  assert.equal(b.readNow(), undefined);
  assert.deepEqual(b.seen, []);
});
