/**
 * gRPC calls, unary and server-streaming, over an `HttpService` (a `GrpcChannel`, or one
 * `Http2Connection`): the request is one length-prefixed message with `content-type:
 * application/grpc`, `te: trailers` and, for a deadline, `grpc-timeout`; the response's messages
 * are decoded as they arrive, and the call's outcome is `grpc-status`/`grpc-message` from the
 * trailers (or from the head of a trailers-only response).
 *
 * Every way a call can end becomes a status; nothing a server sends throws out of here: a
 * compressed or oversized message, a message cut short, an undecodable one, a missing or
 * unreadable `grpc-status`, a non-gRPC response, a reset stream or a lost connection. Cancelling
 * (the caller's AbortSignal) or an expired deadline resets the stream with CANCEL.
 */
import { bytesBody, HeaderList, type HttpResponse, type HttpService, isGrpc } from "../http/message.ts";
import { Http2ClientError, Http2StreamReset } from "../http/h2/errors.ts";
import { DEFAULT_MAX_MESSAGE_BYTES, frameMessage, GrpcFramingError, MessageDecoder } from "./framing.ts";
import {
  GrpcError,
  type GrpcStatus,
  parseGrpcStatus,
  Status,
  statusFromHttp,
  statusFromReset,
} from "./status.ts";

/** What the generated message codecs (proto/gen_messages) provide. */
export interface MessageType<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

export interface Method<Req, Res> {
  /** `/package.Service/Method` */
  path: string;
  requestType: MessageType<Req>;
  responseType: MessageType<Res>;
}

/** A method of a generated service descriptor, e.g. `methodOf(DestinationDefinition, "get")`. */
export function methodOf<
  D extends {
    fullName: string;
    methods: Record<
      string,
      { name: string; requestType: MessageType<unknown>; responseType: MessageType<unknown> }
    >;
  },
  K extends keyof D["methods"] & string,
>(
  service: D,
  key: K,
): Method<
  D["methods"][K]["requestType"] extends MessageType<infer Q> ? Q : never,
  D["methods"][K]["responseType"] extends MessageType<infer R> ? R : never
> {
  const m = service.methods[key];
  return {
    path: `/${service.fullName}/${m.name}`,
    requestType: m.requestType as never,
    responseType: m.responseType as never,
  };
}

export interface GrpcClientOptions {
  /** `:authority` of every call. */
  authority: string;
  /** `:scheme`: "https" when the transport is TLS. */
  scheme: "http" | "https";
  /** Largest response message accepted. Default 4 MiB. */
  maxMessageBytes?: number;
}

export interface CallOptions {
  /** Aborting cancels the call (RST_STREAM CANCEL); the outcome is CANCELLED. */
  signal?: AbortSignal;
  /** Deadline: sent as `grpc-timeout` and enforced here (DEADLINE_EXCEEDED). */
  timeoutMs?: number;
}

export class GrpcClient {
  readonly #send: HttpService;
  readonly #o: GrpcClientOptions;

  constructor(send: HttpService, o: GrpcClientOptions) {
    this.#send = send;
    this.#o = o;
  }

  /** One request, one response; rejects with GrpcError for any status but OK. */
  async unary<Req, Res>(m: Method<Req, Res>, req: Req, opts: CallOptions = {}): Promise<Res> {
    let out: Res | undefined;
    let n = 0;
    const st = await this.#call(m, req, opts, (r) => {
      if (n++ > 0) {
        throw new GrpcFramingError(Status.INTERNAL, "more than one response message for a unary call");
      }
      out = r;
    });
    if (st.code !== Status.OK) throw GrpcError.of(st);
    if (n === 0) {
      throw new GrpcError(Status.INTERNAL, `${m.path}: the server sent OK without a response message`);
    }
    return out as Res;
  }

  /**
   * Calls `onMessage` with each response message as it arrives; resolves with the call's final
   * status (never rejects). A throwing `onMessage` cancels the call (status UNKNOWN).
   */
  serverStream<Req, Res>(
    m: Method<Req, Res>,
    req: Req,
    onMessage: (r: Res) => void,
    opts: CallOptions = {},
  ): Promise<GrpcStatus> {
    return this.#call(m, req, opts, onMessage);
  }

  async #call<Req, Res>(
    m: Method<Req, Res>,
    req: Req,
    opts: CallOptions,
    onMessage: (r: Res) => void,
  ): Promise<GrpcStatus> {
    const outer = opts.signal;
    if (outer?.aborted) return { code: Status.CANCELLED, details: "cancelled before it started" };
    const abort = new AbortController();
    /** Set when we end the call ourselves; it is the outcome whatever the stream then reports. */
    let ours: GrpcStatus | undefined;
    const onCancel = () => {
      ours ??= { code: Status.CANCELLED, details: `${m.path}: cancelled by the caller` };
      abort.abort(GrpcError.of(ours));
    };
    outer?.addEventListener("abort", onCancel, { once: true });
    const fields = ["content-type", "application/grpc", "te", "trailers"];
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (opts.timeoutMs !== undefined) {
      const ms = Math.max(0, Math.ceil(opts.timeoutMs));
      fields.push("grpc-timeout", grpcTimeout(ms));
      timer = setTimeout(() => {
        ours ??= { code: Status.DEADLINE_EXCEEDED, details: `${m.path}: deadline of ${ms}ms exceeded` };
        abort.abort(GrpcError.of(ours));
      }, ms);
    }
    try {
      let payload: Uint8Array;
      try {
        payload = frameMessage(m.requestType.encode(req).finish());
      } catch (e) {
        return {
          code: Status.INTERNAL,
          details: `${m.path}: cannot encode the request: ${(e as Error).message}`,
        };
      }
      let res: HttpResponse;
      try {
        res = await this.#send({
          method: "POST",
          scheme: this.#o.scheme,
          authority: this.#o.authority,
          path: m.path,
          version: "HTTP/2",
          headers: new HeaderList(fields),
          body: bytesBody([payload]),
        }, abort.signal);
      } catch (e) {
        return ours ?? statusOfError(m.path, e);
      }
      return await this.#read(m, res, onMessage, () => ours);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onCancel);
    }
  }

  async #read<Res>(
    m: Method<unknown, Res>,
    res: HttpResponse,
    onMessage: (r: Res) => void,
    ours: () => GrpcStatus | undefined,
  ): Promise<GrpcStatus> {
    const h = res.headers;
    const body = res.body;
    if (res.status !== 200) {
      body.cancel();
      return {
        code: statusFromHttp(res.status),
        details: `${m.path}: HTTP status ${res.status} instead of a gRPC response`,
      };
    }
    const headStatus = h.get("grpc-status");
    if (headStatus !== undefined) {
      // Trailers-only: the status came in the head (an error before any message, usually).
      body.cancel();
      return withPath(m.path, parseGrpcStatus(headStatus, h.get("grpc-message")));
    }
    if (!isGrpc(h)) {
      body.cancel();
      return {
        code: Status.UNKNOWN,
        details: `${m.path}: content-type ${
          JSON.stringify(h.get("content-type") ?? "")
        } is not application/grpc`,
      };
    }
    const decoder = new MessageDecoder(this.#o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    try {
      for (;;) {
        let chunk = body.readNow?.();
        if (chunk === undefined) chunk = await body.read();
        if (chunk === null) break;
        for (const bytes of decoder.push(chunk)) {
          let msg: Res;
          try {
            // Decoded bytes fields are views of their input: a copy keeps a long-lived message (a
            // policy) from pinning the socket's whole read buffer.
            msg = m.responseType.decode(new Uint8Array(bytes));
          } catch (e) {
            throw new GrpcFramingError(
              Status.INTERNAL,
              `cannot decode a response message: ${(e as Error).message}`,
            );
          }
          onMessage(msg);
        }
      }
      decoder.end();
    } catch (e) {
      body.cancel();
      const mine = ours();
      if (mine) return mine;
      if (e instanceof GrpcFramingError) return { code: e.code, details: `${m.path}: ${e.message}` };
      return statusOfError(m.path, e);
    }
    const t = body.trailers;
    return withPath(m.path, parseGrpcStatus(t?.get("grpc-status"), t?.get("grpc-message")));
  }
}

/** `grpc-timeout`: at most 8 digits and a unit; milliseconds while they fit, then coarser. */
export function grpcTimeout(ms: number): string {
  if (ms < 1e8) return `${ms}m`;
  const s = Math.ceil(ms / 1000);
  if (s < 1e8) return `${s}S`;
  return `${Math.min(99_999_999, Math.ceil(s / 3600))}H`;
}

/** The server's own details stay as sent; statuses the client made up name the method. */
function withPath(path: string, s: GrpcStatus): GrpcStatus {
  return s.code === Status.UNKNOWN && s.details.startsWith("the server")
    ? { ...s, details: `${path}: ${s.details}` }
    : s;
}

function statusOfError(path: string, e: unknown): GrpcStatus {
  if (e instanceof GrpcError) return { code: e.code, details: e.details };
  const message = (e as Error)?.message ?? String(e);
  if (e instanceof Http2StreamReset) {
    return {
      code: e.connectionLost ? Status.UNAVAILABLE : statusFromReset(e.code),
      details: `${path}: ${message}`,
    };
  }
  if (e instanceof Http2ClientError) {
    if (e.reason === "malformed_response") return { code: Status.INTERNAL, details: message };
    if (e.reason === "reset" && e.code !== undefined) {
      return { code: statusFromReset(e.code), details: message };
    }
    return { code: Status.UNAVAILABLE, details: message };
  }
  if (e instanceof GrpcFramingError) return { code: e.code, details: `${path}: ${message}` };
  return { code: Status.UNKNOWN, details: `${path}: ${message}` };
}
