import assert from "node:assert/strict";
import { FakeClock } from "../../../proto/support/fake_clock.ts";
import { seededRng } from "../../core/rng.ts";
import {
  type Body,
  bytesBody,
  HeaderList,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
} from "../../http/message.ts";
import { request } from "../testing.ts";
import { RetryBudget } from "./budget.ts";
import { execute, type ExecuteDeps, type RequestPlan } from "./execute.ts";
import { grpcRetryPolicy, httpRetryPolicy, profileRetryPolicy, type RetryPolicy } from "./policy.ts";
import { TimeoutError } from "./timeouts.ts";

const tick = () => new Promise((r) => setTimeout(r, 0));
const enc = new TextEncoder();

function respond(status: number, headers: string[] = [], body: Body = bytesBody([])): HttpResponse {
  return { status, headers: new HeaderList(headers), body };
}

/** A service answering from a script; records each attempt's body. */
function scripted(answers: (HttpResponse | Error | "hang")[]) {
  const seen: string[] = [];
  let calls = 0;
  const svc: HttpService = async (req: HttpRequest, signal: AbortSignal) => {
    const a = answers[Math.min(calls++, answers.length - 1)];
    let text = "";
    for (let c = await req.body.read(); c !== null; c = await req.body.read()) {
      text += new TextDecoder().decode(c);
    }
    seen.push(text);
    if (a === "hang") {
      return await new Promise<HttpResponse>((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    }
    if (a instanceof Error) throw a;
    return a;
  };
  return { svc, seen, calls: () => calls };
}

function deps(clock = new FakeClock(), log: string[] = []): ExecuteDeps & { log: string[] } {
  return {
    clock,
    rng: seededRng(1),
    log,
    onRetryable: (retried, skipped) => log.push(retried ? "retry" : `skip:${skipped}`),
  };
}

const httpPolicy = (max: number, extra: Partial<RetryPolicy> = {}): RetryPolicy => ({
  ...httpRetryPolicy({ maxRetries: max, maxRequestBytes: 0, conditions: undefined }, "t")!,
  ...extra,
});

const plan = (retry: RetryPolicy | undefined, timeouts = {}): RequestPlan => ({ retry, timeouts });

function post(body: string): HttpRequest {
  const b = enc.encode(body);
  return { ...request("POST", "/orders"), body: bytesBody([b]) };
}

Deno.test("retries: retryable statuses are retried with the whole body, up to max_retries", async () => {
  const s = scripted([respond(503), respond(502), respond(200)]);
  const d = deps();
  const res = await execute(post("order-1"), new AbortController().signal, plan(httpPolicy(2)), s.svc, d);
  assert.equal(res.status, 200);
  assert.deepEqual(s.seen, ["order-1", "order-1", "order-1"], "each attempt got the full body");
  assert.deepEqual(d.log, ["retry", "retry"]);

  const limited = scripted([respond(503)]);
  const d2 = deps();
  const r2 = await execute(post("x"), new AbortController().signal, plan(httpPolicy(1)), limited.svc, d2);
  assert.equal(r2.status, 503);
  assert.equal(limited.calls(), 2);
  assert.deepEqual(d2.log, ["retry", "skip:limit"]);

  const notRetryable = scripted([respond(404), respond(200)]);
  const r3 = await execute(
    post("x"),
    new AbortController().signal,
    plan(httpPolicy(3)),
    notRetryable.svc,
    deps(),
  );
  assert.equal(r3.status, 404);
  assert.equal(notRetryable.calls(), 1);

  const noPolicy = scripted([respond(503), respond(200)]);
  assert.equal(
    (await execute(post("x"), new AbortController().signal, plan(undefined), noPolicy.svc, deps())).status,
    503,
  );
});

Deno.test("retries: a body over max_request_bytes is sent once and not retried", async () => {
  const s = scripted([respond(503), respond(200)]);
  const d = deps();
  const big = "x".repeat(2_000);
  const res = await execute(
    post(big),
    new AbortController().signal,
    plan(httpPolicy(3, { maxRequestBytes: 1_000 })),
    s.svc,
    d,
  );
  assert.equal(res.status, 503);
  assert.equal(s.calls(), 1);
  assert.equal(s.seen[0].length, 2_000, "the body still went through in full");
  assert.deepEqual(d.log, ["skip:body"]);
});

Deno.test("retries: failfast errors are retried, load shedding is not; backoff delays the retry", async () => {
  const clock = new FakeClock();
  const s = scripted([new HttpError(503, "no endpoints", "failfast", 14), respond(200)]);
  const backoff = { minMs: 100, maxMs: 1_000, jitter: 0 };
  const p = execute(
    post("a"),
    new AbortController().signal,
    plan(httpPolicy(1, { backoff })),
    s.svc,
    deps(clock),
  );
  await tick();
  assert.equal(s.calls(), 1);
  clock.advance(99);
  await tick();
  assert.equal(s.calls(), 1, "waiting out the backoff");
  clock.advance(1);
  assert.equal((await p).status, 200);
  assert.equal(s.calls(), 2);

  const shed = scripted([new HttpError(503, "queue full", "queue_full", 14), respond(200)]);
  await assert.rejects(
    execute(post("a"), new AbortController().signal, plan(httpPolicy(1)), shed.svc, deps()),
    (e: HttpError) => e.reason === "queue_full",
  );
  assert.equal(shed.calls(), 1);
});

Deno.test("retries: gRPC codes from trailers-only headers or trailers", async () => {
  const grpc = grpcRetryPolicy({
    maxRetries: 1,
    maxRequestBytes: 0,
    conditions: {
      cancelled: false,
      deadineExceeded: false,
      resourceExhausted: false,
      internal: false,
      unavailable: true,
    },
  }, "t")!;
  const gReq = () => ({ ...post("m"), headers: new HeaderList(["content-type", "application/grpc"]) });
  const trailers = (code: string) => bytesBody([enc.encode("msg")], new HeaderList(["grpc-status", code]));
  const cases: [HttpResponse, number][] = [
    [respond(200, ["content-type", "application/grpc", "grpc-status", "14"]), 2],
    [respond(200, ["content-type", "application/grpc"], trailers("14")), 2],
    [respond(200, ["content-type", "application/grpc"], trailers("5")), 1],
    [respond(200, ["content-type", "application/grpc"], trailers("0")), 1],
  ];
  for (const [first, calls] of cases) {
    const s = scripted([first, respond(200, ["grpc-status", "0"])]);
    const res = await execute(gReq(), new AbortController().signal, plan(grpc), s.svc, deps());
    assert.equal(s.calls(), calls, JSON.stringify(first.headers.raw));
    if (calls === 1) {
      // The peeked body is replayed to the caller unchanged.
      assert.equal(new TextDecoder().decode((await res.body.read())!), "msg");
      assert.equal(await res.body.read(), null);
      assert.ok(res.body.trailers?.has("grpc-status"));
    }
  }
});

Deno.test("retries: profile routes retry failures while the budget lasts", async () => {
  const clock = new FakeClock();
  const budget = new RetryBudget({ ttlMs: 1_000, minRetriesPerSecond: 1, retryRatio: 0 }, clock);
  const p = profileRetryPolicy(budget, undefined);
  const d = deps(clock);
  const s = scripted([respond(500), respond(500), respond(500), respond(500)]);
  const r = await execute(post("a"), new AbortController().signal, plan(p), s.svc, d);
  assert.equal(r.status, 500);
  assert.equal(s.calls(), 2, "one retry from the 1/s reserve, then the budget is empty");
  assert.deepEqual(d.log, ["retry", "skip:budget"]);

  const successClass = profileRetryPolicy(
    new RetryBudget({ ttlMs: 1_000, minRetriesPerSecond: 10, retryRatio: 0 }, clock),
    (st) => st === 500 ? false : undefined,
  );
  const s2 = scripted([respond(500), respond(200)]);
  assert.equal(
    (await execute(post("a"), new AbortController().signal, plan(successClass), s2.svc, deps(clock))).status,
    500,
  );
  assert.equal(s2.calls(), 1, "a response class marking 500 as success is not retried");

  const errors = scripted([new Error("connection reset"), respond(200)]);
  await assert.rejects(
    execute(post("a"), new AbortController().signal, plan(p), errors.svc, deps(clock)),
    /reset/,
  );
  assert.equal(errors.calls(), 1, "profile routes do not retry errors");
});

Deno.test("timeouts: request timeout → 504 TimeoutError (reason timeout, gRPC 4) at the deadline", async () => {
  const clock = new FakeClock();
  const s = scripted(["hang"]);
  let error: unknown;
  let at = 0;
  const t0 = clock.now();
  execute(post("a"), new AbortController().signal, plan(undefined, { requestMs: 1_000 }), s.svc, deps(clock))
    .catch((e) => (error = e, at = clock.now()));
  await tick();
  clock.advance(999);
  const got = (): unknown => error;
  await tick();
  assert.equal(got(), undefined);
  clock.advance(1);
  await tick();
  assert.ok(got() instanceof TimeoutError);
  const e = got() as TimeoutError;
  assert.deepEqual([e.status, e.reason, e.grpcStatus, e.kind], [504, "timeout", 4, "request"]);
  assert.equal(at - t0, 1_000);
  assert.equal(clock.pendingTimers, 0, "no timers left behind");
});

Deno.test("timeouts: per-try timeout retries a slow attempt; the last attempt has none", async () => {
  const clock = new FakeClock();
  let calls = 0;
  const slowThenSlow: HttpService = (req, signal) => {
    calls++;
    void req;
    return new Promise((resolve, reject) => {
      const cancel = clock.after(300, () => resolve(respond(200)));
      signal.addEventListener("abort", () => {
        cancel();
        reject(signal.reason);
      });
    });
  };
  const p = execute(
    request("GET", "/"),
    new AbortController().signal,
    plan(httpPolicy(1, { perTryTimeoutMs: 100 })),
    slowThenSlow,
    deps(clock),
  );
  await tick();
  clock.advance(100);
  await tick();
  assert.equal(calls, 2, "first attempt timed out at 100 ms and was retried");
  clock.advance(150);
  await tick();
  clock.advance(150);
  assert.equal((await p).status, 200, "the last attempt was allowed its 300 ms");
});

Deno.test("timeouts: response and idle timeouts apply to the response body", async () => {
  const clock = new FakeClock();
  const chunks: ((c: Uint8Array | null) => void)[] = [];
  const slowBody: Body = {
    length: undefined,
    trailers: undefined,
    read: () => new Promise((r) => chunks.push(r)),
    cancel: () => {},
  };
  const svc: HttpService = () => Promise.resolve(respond(200, [], slowBody));
  const res = await execute(
    request("GET", "/"),
    new AbortController().signal,
    plan(undefined, { responseMs: 500 }),
    svc,
    deps(clock),
  );
  const read = res.body.read();
  clock.advance(500);
  await assert.rejects(read, (e: TimeoutError) => e.kind === "response" && e.status === 504);

  const idleRes = await execute(
    request("GET", "/"),
    new AbortController().signal,
    plan(undefined, { idleMs: 100 }),
    svc,
    deps(clock),
  );
  for (let i = 0; i < 5; i++) {
    const r = idleRes.body.read();
    clock.advance(80);
    chunks.at(-1)!(new Uint8Array(1));
    assert.equal((await r)!.length, 1, "a chunk every 80 ms keeps the stream alive");
  }
  const stalled = idleRes.body.read();
  clock.advance(100);
  await assert.rejects(stalled, (e: TimeoutError) => e.kind === "idle");
});

Deno.test("retries: Linkerd's retry events per request — requests, successes, limit_exceeded, overflow", async () => {
  const run = async (p: RetryPolicy, answers: HttpResponse[], clock = new FakeClock()) => {
    const events: string[] = [];
    const req = post("e");
    const d: ExecuteDeps = {
      clock,
      rng: seededRng(1),
      onRetryEvent: (r, ev) => {
        assert.equal(r, req, "the event names the request it belongs to");
        events.push(ev);
      },
    };
    await execute(req, new AbortController().signal, plan(p), scripted(answers).svc, d);
    return events;
  };
  assert.deepEqual(await run(httpPolicy(2), [respond(200)]), [], "first attempt answered: no event");
  assert.deepEqual(await run(httpPolicy(2), [respond(503), respond(404)]), ["requests", "successes"]);
  assert.deepEqual(
    await run(httpPolicy(1), [respond(503), respond(503)]),
    ["requests", "limit_exceeded"],
    "retryable again with no retry left",
  );
  const clock = new FakeClock();
  const budget = new RetryBudget({ ttlMs: 1_000, minRetriesPerSecond: 1, retryRatio: 0 }, clock);
  assert.deepEqual(
    await run(profileRetryPolicy(budget, undefined), [respond(500)], clock),
    ["requests", "overflow"],
    "the budget refusing a retry is the overflow",
  );
});
