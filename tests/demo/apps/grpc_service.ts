/**
 * The demo's gRPC service (weft.demo.Echo, see echo_proto.ts): `Say` answers once, `Count` streams `count` replies
 * `interval_ms` apart (both capped so one caller cannot hold the server). gRPC on GRPC_PORT (50051); readiness on
 * HEALTH_PORT (8081) `/healthz`, true once the gRPC port is bound. Env: POD_NAME.
 */
import * as grpc from "@grpc/grpc-js";
import { type CountRequest, type EchoReply, EchoService, type SayRequest } from "./echo_proto.ts";
import { onTerm } from "./shutdown.ts";

const grpcPort = Number(Deno.env.get("GRPC_PORT") ?? "50051");
const healthPort = Number(Deno.env.get("HEALTH_PORT") ?? "8081");
const pod = Deno.env.get("POD_NAME") ?? Deno.hostname();
const MAX_COUNT = 100;
const MAX_INTERVAL_MS = 1000;

const server = new grpc.Server();
server.addService(EchoService, {
  say: (call: grpc.ServerUnaryCall<SayRequest, EchoReply>, cb: grpc.sendUnaryData<EchoReply>) => {
    cb(null, { text: call.request.text, pod, seq: 1 });
  },
  count: (call: grpc.ServerWritableStream<CountRequest, EchoReply>) => {
    const { count, intervalMs } = call.request;
    if (count < 1 || count > MAX_COUNT) {
      call.destroy(Object.assign(new Error(`count must be 1..${MAX_COUNT}, got ${count}`), {
        code: grpc.status.INVALID_ARGUMENT,
      }));
      return;
    }
    const interval = Math.min(intervalMs, MAX_INTERVAL_MS);
    let seq = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = () => {
      if (call.cancelled) return;
      seq++;
      call.write({ text: `tick ${seq}/${count}`, pod, seq });
      if (seq >= count) call.end();
      else timer = setTimeout(next, interval);
    };
    call.on("cancelled", () => clearTimeout(timer));
    next();
  },
});

let bound = false;
server.bindAsync(`0.0.0.0:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    console.error(`cannot bind gRPC :${grpcPort}: ${err.message}`);
    Deno.exit(1);
  }
  bound = true;
  console.log(`demo grpc ${pod} on :${port}`);
});

const stop = new AbortController();
const health = Deno.serve(
  { port: healthPort, hostname: "0.0.0.0", signal: stop.signal, onListen: () => {} },
  (req) =>
    new URL(req.url).pathname === "/healthz" && bound
      ? new Response("ok\n")
      : new Response("not ready\n", { status: 503 }),
);
onTerm(async () => {
  stop.abort();
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  await health.finished;
});
