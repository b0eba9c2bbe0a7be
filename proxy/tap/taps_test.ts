import assert from "node:assert/strict";
import { bytesBody, HeaderList, type HttpRequest, type HttpResponse } from "../http/message.ts";
import { Http2StreamReset } from "../http/h2/errors.ts";
import type { TapEvent } from "../../proto/tap_messages.ts";
import { compileMatch } from "./match.ts";
import { TapSession } from "./session.ts";
import { type TapContext, Taps } from "./taps.ts";

const ctx: TapContext = {
  direction: "outbound",
  source: { ip: "10.0.0.1", port: 5000 },
  destination: { ip: "10.0.0.2", port: 80 },
  destinationLabels: { pod: "b" },
  routeLabels: undefined,
  sourceLabels: { tls: "loopback" },
  destinationMeta: { pod: "b", tls: "true", server_id: "b.ns.serviceaccount.identity.weft.cluster.local" },
};
const req = (): HttpRequest => ({
  method: "POST",
  scheme: "http",
  authority: "b:80",
  path: "/x",
  version: "HTTP/2",
  headers: new HeaderList(["content-type", "application/grpc"]),
  body: bytesBody([]),
});
const all = compileMatch({
  match: {
    $case: "http",
    value: { match: { $case: "path", value: { match: { $case: "prefix", value: "/" } } } },
  },
});

function setup(limit = 10): { taps: Taps; s: TapSession; events: () => TapEvent[] } {
  const taps = new Taps();
  const s = new TapSession({ base: 7, limit, match: all, headers: true });
  taps.add(s);
  return {
    taps,
    s,
    events: () => {
      const out: TapEvent[] = [];
      for (let e = s.takeQueued(1000); e.length > 0; e = s.takeQueued(1000)) out.push(...e);
      return out;
    },
  };
}

const end = (e: TapEvent) =>
  e.event?.value.event?.$case === "responseEnd" ? e.event.value.event.value : undefined;

Deno.test("taps: a gRPC response's status from its trailers, bytes counted, headers extracted", async () => {
  const { taps, events } = setup();
  const res: HttpResponse = {
    status: 200,
    headers: new HeaderList(["content-type", "application/grpc"]),
    body: bytesBody([new Uint8Array(7), new Uint8Array(3)], new HeaderList(["grpc-status", "5"])),
  };
  const out = await taps.exchange(req(), ctx, () => Promise.resolve(res));
  while (await out.body.read() !== null) { /* drain */ }
  assert.equal(out.body.trailers?.get("grpc-status"), "5", "trailers pass through");
  const ev = events();
  assert.deepEqual(ev.map((e) => e.event?.value.event?.$case), [
    "requestInit",
    "responseInit",
    "responseEnd",
  ]);
  const init = ev[0].event!.value.event!.value as { headers?: { headers: { name: string }[] } };
  assert.deepEqual(init.headers?.headers.slice(0, 4).map((h) => h.name), [
    ":method",
    ":scheme",
    ":authority",
    ":path",
  ]);
  assert.equal(end(ev[2])?.responseBytes, 10n);
  assert.deepEqual(end(ev[2])?.eos, { end: { $case: "grpcStatusCode", value: 5 } });
  assert.equal(ev[0].source?.port, 5000);
  assert.equal(ev[0].destinationMeta?.labels.server_id, ctx.destinationMeta.server_id);
});

Deno.test("taps: failures end the followed request — a reset, a synchronous throw, a cancelled body", async () => {
  const { taps, s, events } = setup(3);
  await assert.rejects(taps.exchange(req(), ctx, () => Promise.reject(new Http2StreamReset("reset", 2))));
  assert.deepEqual(end(events()[1])?.eos, { end: { $case: "resetErrorCode", value: 2 } });
  await assert.rejects(taps.exchange(req(), ctx, () => {
    throw new Error("boom");
  }));
  assert.deepEqual(end(events()[1])?.eos, { end: undefined });
  const out = await taps.exchange(
    req(),
    ctx,
    () => Promise.resolve({ status: 200, headers: new HeaderList(), body: bytesBody([new Uint8Array(4)]) }),
  );
  out.body.cancel();
  assert.deepEqual(end(events()[2])?.eos, { end: { $case: "resetErrorCode", value: 8 } });
  assert.equal(taps.active, 0, "three requests: the limit");
  assert.equal(s.finished, true, "every followed request ended, so the session is over");
  assert.equal(await s.next(), null);
});
