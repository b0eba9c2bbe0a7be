/**
 * The tap server on the proxy's control port (LINKERD2_PROXY_CONTROL_LISTEN_ADDR, 4190): gRPC
 * `io.linkerd.proxy.tap.Tap/Observe` over HTTP/2 inside mesh TLS with the proxy's current
 * certificate (the inbound side's MeshTls, so a renewed certificate applies to the next
 * connection), ALPN h2, a client certificate required. As in Linkerd, only the tap component's
 * identity (LINKERD2_PROXY_TAP_SVC_NAME) may observe: any other client, or one without a
 * certificate, gets PERMISSION_DENIED on every call; a plaintext client fails the handshake.
 *
 * Bounds against hostile or careless clients: at most `maxConnections` connections and
 * `maxStreamsPerConnection` streams each, `Taps.max` concurrent taps (RESOURCE_EXHAUSTED beyond),
 * a request message of at most 16 KiB read within 10 s, `limit` in 1..`maxLimit`, a match tree
 * as `match.ts` allows (INVALID_ARGUMENT naming the fault otherwise).
 */
import type * as net from "node:net";
import { ObserveRequest, TAP_OBSERVE_PATH, TapEvent } from "../../proto/tap_messages.ts";
import type { ListenAddr } from "../config/parse.ts";
import type { Log } from "../core/log.ts";
import { listenAll, type Listener } from "../transport/listen.ts";
import type { MeshTls } from "../transport/tls.ts";
import { serveHttp2 } from "../http/h2/server.ts";
import {
  type Body,
  EMPTY_BODY,
  HeaderList,
  type HttpRequest,
  type HttpResponse,
  type HttpService,
  isGrpc,
} from "../http/message.ts";
import { frameMessage, GrpcFramingError, MessageDecoder } from "../grpc/framing.ts";
import { Status } from "../grpc/status.ts";
import { Counter } from "../metrics/instruments.ts";
import type { Registry } from "../metrics/registry.ts";
import { compileMatch, InvalidMatch } from "./match.ts";
import { TapSession } from "./session.ts";
import { type Taps, TooManyTaps } from "./taps.ts";

/** Largest ObserveRequest taken (a real one is well under 1 KiB). */
export const MAX_OBSERVE_REQUEST_BYTES = 16 * 1024;
/** Largest `limit` taken: requests one tap may report. */
export const DEFAULT_MAX_LIMIT = 100_000;

export interface TapServerDeps {
  listen: ListenAddr;
  tls: MeshTls;
  /** The only client identity allowed to observe (LINKERD2_PROXY_TAP_SVC_NAME). */
  tapName: string;
  taps: Taps;
  log: Log;
  registry?: Registry;
  maxConnections?: number;
  maxStreamsPerConnection?: number;
  maxLimit?: number;
  handshakeTimeoutMs?: number;
  /** Events one tap may have waiting for its client (session.ts default). */
  maxQueue?: number;
}

export interface TapServer {
  addr: { ip: string; port: number };
  /** Stops accepting, ends every tap and closes the connections. */
  close(): Promise<void>;
}

export async function serveTap(d: TapServerDeps): Promise<TapServer> {
  const maxConns = d.maxConnections ?? 16;
  const conns = new Set<net.Socket>();
  const sessions = new Set<TapSession>();
  const dropped = new Counter({
    name: "tap_dropped_events_total",
    help: "Tap events dropped because a tap client read them slower than requests produced them.",
    registers: d.registry ? [d.registry] : [],
  });
  const refused = new Counter({
    name: "tap_refused_connections_total",
    help: "Connections to the tap server refused, by reason.",
    labelNames: ["reason"],
    registers: d.registry ? [d.registry] : [],
  });
  let nextBase = crypto.getRandomValues(new Uint32Array(1))[0];
  const observe = observeService(d, sessions, () => {
    nextBase = (nextBase + 1) >>> 0;
    return nextBase;
  }, () => dropped.inc());

  const onConn = (sock: net.Socket) => {
    sock.on("error", () => {});
    if (conns.size >= maxConns) {
      refused.inc({ reason: "too_many_connections" });
      sock.destroy();
      return;
    }
    conns.add(sock);
    sock.once("close", () => conns.delete(sock));
    void (async () => {
      let accepted;
      try {
        accepted = await d.tls.accept(sock, ["h2"], d.handshakeTimeoutMs ?? 10_000);
      } catch (e) {
        refused.inc({ reason: "tls" });
        d.log("info", `tap: refused ${sock.remoteAddress}:${sock.remotePort}: ${(e as Error).message}`);
        sock.destroy();
        return;
      }
      const { socket, clientId } = accepted;
      conns.add(socket);
      socket.once("close", () => conns.delete(socket));
      const authorized = clientId === d.tapName;
      if (!authorized) {
        refused.inc({ reason: clientId === undefined ? "no_client_certificate" : "unauthorized" });
        d.log(
          "info",
          `tap: ${sock.remoteAddress}:${sock.remotePort} ${
            clientId === undefined ? "presented no client certificate" : `is ${clientId}`
          }, not ${d.tapName}: every call is refused`,
        );
      }
      const service: HttpService = authorized ? observe : deny(d.tapName, clientId);
      await serveHttp2(socket, service, {
        log: d.log,
        maxConcurrentStreams: d.maxStreamsPerConnection ?? 8,
      }).closed.catch(() => {});
    })();
  };

  // As the data-plane listeners: `[::]` falls back to 0.0.0.0 in a pod without IPv6.
  const [listener]: Listener[] = await listenAll([d.listen], onConn, (line) => d.log("warn", `tap: ${line}`));
  d.log("info", `tap server on ${listener.addr.ip}:${listener.addr.port}, authorized for ${d.tapName}`);
  return {
    addr: listener.addr,
    async close() {
      await listener.close();
      for (const s of sessions) {
        s.close();
        d.taps.remove(s);
      }
      for (const c of conns) c.destroy();
    },
  };
}

function deny(tapName: string, clientId: string | undefined): HttpService {
  const who = clientId === undefined ? "this client presented no certificate" : `this client is ${clientId}`;
  return () =>
    Promise.resolve(
      grpcError(Status.PERMISSION_DENIED, `tap is authorized for ${tapName} only; ${who}`),
    );
}

function observeService(
  d: TapServerDeps,
  sessions: Set<TapSession>,
  base: () => number,
  onDrop: () => void,
): HttpService {
  const maxLimit = d.maxLimit ?? DEFAULT_MAX_LIMIT;
  return async (req, signal) => {
    if (req.path !== TAP_OBSERVE_PATH) {
      return grpcError(Status.UNIMPLEMENTED, `the tap server has no method ${req.path}`);
    }
    if (req.method !== "POST" || !isGrpc(req.headers)) {
      return grpcError(Status.INVALID_ARGUMENT, "Observe must be a gRPC POST");
    }
    let msg: ObserveRequest;
    try {
      msg = ObserveRequest.decode(await readOne(req, signal));
    } catch (e) {
      // The framing's messages speak of "the server" (they were written for the proxy's client).
      if (e instanceof GrpcFramingError) {
        return grpcError(
          e.code,
          e.code === Status.RESOURCE_EXHAUSTED
            ? `the ObserveRequest is over this proxy's limit of ${MAX_OBSERVE_REQUEST_BYTES} bytes`
            : "the request body is not a well-formed gRPC message",
        );
      }
      if (e instanceof RequestProblem) return grpcError(Status.INVALID_ARGUMENT, e.message);
      return grpcError(
        Status.INVALID_ARGUMENT,
        `the ObserveRequest does not decode: ${(e as Error).message}`,
      );
    }
    if (msg.limit === 0) return grpcError(Status.INVALID_ARGUMENT, "limit must be positive");
    if (msg.limit > maxLimit) {
      return grpcError(
        Status.INVALID_ARGUMENT,
        `limit ${msg.limit} is over this proxy's maximum of ${maxLimit} requests per tap`,
      );
    }
    let match;
    try {
      match = compileMatch(msg.match);
    } catch (e) {
      if (e instanceof InvalidMatch) return grpcError(Status.INVALID_ARGUMENT, e.message);
      throw e;
    }
    const headers = msg.extract?.extract?.$case === "http" &&
      msg.extract.extract.value.extract?.$case === "headers";
    const session = new TapSession({
      base: base(),
      limit: msg.limit,
      match,
      headers,
      maxQueue: d.maxQueue,
      onDrop,
    });
    try {
      d.taps.add(session);
    } catch (e) {
      if (e instanceof TooManyTaps) return grpcError(Status.RESOURCE_EXHAUSTED, e.message);
      throw e;
    }
    sessions.add(session);
    const end = () => {
      session.close();
      d.taps.remove(session);
      sessions.delete(session);
    };
    signal.addEventListener("abort", end, { once: true });
    d.log("debug", `tap ${session.base}: limit ${msg.limit}`);
    return {
      status: 200,
      headers: new HeaderList(["content-type", "application/grpc"]),
      body: new EventStream(session, end),
    } satisfies HttpResponse;
  };
}

class RequestProblem extends Error {}

/** The request's one message, read within 10 s; anything else is the client's error. */
async function readOne(req: HttpRequest, signal: AbortSignal): Promise<Uint8Array> {
  const dec = new MessageDecoder(MAX_OBSERVE_REQUEST_BYTES);
  const msgs: Uint8Array[] = [];
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(10_000)]);
  const stop = new Promise<never>((_, reject) =>
    deadline.addEventListener(
      "abort",
      () => reject(new RequestProblem("the ObserveRequest did not arrive within 10 s")),
      { once: true },
    )
  );
  stop.catch(() => {});
  for (;;) {
    const c = await Promise.race([req.body.read(), stop]);
    if (c === null) break;
    for (const m of dec.push(c)) msgs.push(m.slice());
    if (msgs.length > 1) {
      req.body.cancel();
      throw new RequestProblem("Observe takes exactly one ObserveRequest; the client sent more");
    }
  }
  dec.end();
  if (msgs.length !== 1) {
    throw new RequestProblem("Observe takes exactly one ObserveRequest; the client sent none");
  }
  return msgs[0];
}

/** The Observe response: each event as a gRPC message, then `grpc-status: 0` when the tap is over. */
class EventStream implements Body {
  readonly length = undefined;
  #trailers: HeaderList | undefined;
  readonly #session: TapSession;
  readonly #end: () => void;

  constructor(session: TapSession, end: () => void) {
    this.#session = session;
    this.#end = end;
  }

  get trailers(): HeaderList | undefined {
    return this.#trailers;
  }

  async read(): Promise<Uint8Array | null> {
    const ev = await this.#session.next();
    if (ev === null) {
      this.#end();
      this.#trailers = new HeaderList(["grpc-status", "0"]);
      return null;
    }
    // Events already waiting go out in the same chunk: one HTTP/2 write instead of one each.
    const more = this.#session.takeQueued(63);
    if (more.length === 0) return frameMessage(TapEvent.encode(ev).finish());
    const frames = [ev, ...more].map((e) => frameMessage(TapEvent.encode(e).finish()));
    const out = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let at = 0;
    for (const f of frames) {
      out.set(f, at);
      at += f.length;
    }
    return out;
  }

  cancel(): void {
    this.#end();
  }
}

/**
 * A trailers-only gRPC error. `grpc-message` is percent-encoded as the gRPC spec says (only bytes
 * outside printable ASCII, and `%`), so clients show the text as written.
 */
function grpcError(code: number, message: string): HttpResponse {
  const encoded = Array.from(
    new TextEncoder().encode(message),
    (b) =>
      b >= 0x20 && b <= 0x7e && b !== 0x25
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
  ).join("");
  return {
    status: 200,
    headers: new HeaderList([
      "content-type",
      "application/grpc",
      "grpc-status",
      String(code),
      "grpc-message",
      encoded,
    ]),
    body: EMPTY_BODY,
  };
}
