/**
 * The inbound HTTP access log (`LINKERD2_PROXY_ACCESS_LOG=apache|json`, set by the injector from
 * `config.linkerd.io/access-log`): one line per request to stderr, in Linkerd's two formats.
 *
 *   apache  `<client addr> <client id|-> - [<timestamp>] "<method> <uri> <version>" <status>`
 *   json    {"client.addr","client.id","host","method","processing_ns","request_bytes",
 *            "response_bytes","status","timestamp","total_ns","trace_id","uri","user_agent","version"}
 *
 * As in Linkerd, the line is written when the response head arrives (or the request fails): the
 * status is the application's, `response_bytes` and `request_bytes` are the content-length headers
 * (empty when absent), `total_ns` the time from the request to the response head.
 * `processing_ns` is the time the proxy itself spent before handing the request on (the
 * synchronous part of the stack: authorization, routing), our nearest measure of Linkerd's "time
 * spent polling the service". Timestamps have microsecond precision (Linkerd's have nanoseconds).
 *
 * Writing never blocks the data path: lines go to a bounded in-memory buffer that one async
 * writer drains; when the sink is slower than the traffic the buffer fills and further lines are
 * dropped and counted (`access_log_dropped_lines_total`) rather than held or awaited.
 */
import type { HttpRequest, HttpResponse, HttpService } from "../../http/message.ts";
import { Counter } from "../../metrics/instruments.ts";
import type { Registry } from "../../metrics/registry.ts";

export type AccessLogFormat = "apache" | "json";

/** Where lines go: `Deno.stderr` in the proxy, anything with the same `write` in tests. */
export interface LineWriter {
  write(p: Uint8Array): Promise<number>;
}

/** Default bound of unwritten log text. */
export const ACCESS_LOG_BUFFER_BYTES = 1 << 20;

/** A bounded, asynchronously drained line buffer; `push` never waits. */
export class LineSink {
  readonly #w: LineWriter;
  readonly #max: number;
  readonly #onDrop: () => void;
  #lines: string[] = [];
  #bytes = 0;
  #writing = false;
  readonly #enc = new TextEncoder();

  constructor(w: LineWriter, o: { maxBytes?: number; onDrop?: () => void } = {}) {
    this.#w = w;
    this.#max = o.maxBytes ?? ACCESS_LOG_BUFFER_BYTES;
    this.#onDrop = o.onDrop ?? (() => {});
  }

  /** Queues one line (without its newline); drops it when the buffer is full. */
  push(line: string): void {
    const n = line.length + 1;
    if (this.#bytes + n > this.#max) {
      this.#onDrop();
      return;
    }
    this.#lines.push(line);
    this.#bytes += n;
    if (!this.#writing) void this.#drain();
  }

  /** Bytes (UTF-16 code units) queued and not yet handed to the writer. */
  get pending(): number {
    return this.#bytes;
  }

  async #drain(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#lines.length > 0) {
        const batch = this.#lines;
        this.#lines = [];
        this.#bytes = 0;
        const bytes = this.#enc.encode(`${batch.join("\n")}\n`);
        for (let off = 0; off < bytes.length;) off += await this.#w.write(bytes.subarray(off));
      }
    } catch {
      // A closed stderr: nothing more can be logged; later lines are dropped as they come.
      this.#lines = [];
      this.#bytes = this.#max;
    } finally {
      this.#writing = false;
    }
  }
}

/** What the access log knows of the connection. */
export interface AccessLogConn {
  /** `ip:port` of the client (`[v6]:port`). */
  clientAddr: string;
  /** The client's mesh identity, if it presented one. */
  clientId: string | undefined;
}

export class AccessLog {
  readonly format: AccessLogFormat;
  readonly #sink: LineSink;
  readonly #now: () => number;

  constructor(
    format: AccessLogFormat,
    writer: LineWriter,
    o: { registry?: Registry; maxBytes?: number; now?: () => number } = {},
  ) {
    this.format = format;
    const dropped = new Counter({
      name: "access_log_dropped_lines_total",
      help: "HTTP access log lines dropped because the log sink was slower than the traffic.",
      registers: o.registry ? [o.registry] : [],
    });
    this.#sink = new LineSink(writer, { maxBytes: o.maxBytes, onDrop: () => dropped.inc() });
    this.#now = o.now ?? (() => performance.timeOrigin + performance.now());
  }

  /**
   * Wraps a connection's service: each request is logged once, when its response head arrives
   * or it fails. The request's fields are read before `inner` runs (which may rewrite them).
   */
  wrap(inner: HttpService, conn: AccessLogConn): HttpService {
    return (req, signal) => {
      const start = this.#now();
      const e = entryOf(req, conn, start);
      let sent: Promise<HttpResponse>;
      try {
        sent = inner(req, signal);
      } catch (err) {
        this.#write(e, undefined, start, this.#now());
        throw err;
      }
      const handed = this.#now();
      return sent.then((res) => {
        e.responseBytes = res.headers.get("content-length") ?? "";
        this.#write(e, res.status, start, handed);
        return res;
      }, (err) => {
        this.#write(e, undefined, start, handed);
        throw err;
      });
    };
  }

  #write(e: Entry, status: number | undefined, start: number, handed: number): void {
    const total = Math.max(0, Math.round((this.#now() - start) * 1e6));
    const processing = Math.max(0, Math.round((handed - start) * 1e6));
    this.#sink.push(
      this.format === "apache" ? apacheLine(e, status) : jsonLine(e, status, total, processing),
    );
  }
}

interface Entry {
  clientAddr: string;
  clientId: string;
  timestamp: string;
  method: string;
  uri: string;
  version: string;
  host: string;
  userAgent: string;
  traceId: string;
  requestBytes: string;
  responseBytes: string;
}

function entryOf(req: HttpRequest, conn: AccessLogConn, at: number): Entry {
  const h = req.headers;
  const http2 = req.version === "HTTP/2";
  return {
    clientAddr: conn.clientAddr,
    clientId: conn.clientId ?? "-",
    timestamp: rfc3339(at),
    method: req.method,
    // The request target as the proxy received it: an HTTP/2 request's full URI, an HTTP/1 one's
    // origin form (or absolute form, when it came so).
    uri: http2 || req.scheme !== undefined
      ? `${req.scheme ?? "http"}://${req.authority}${req.path}`
      : req.path,
    version: http2 ? "HTTP/2.0" : req.version,
    host: h.get("host") ?? req.authority,
    userAgent: h.get("user-agent") ?? "",
    traceId: h.get("x-b3-traceid") ?? h.get("x-request-id") ?? h.get("x-amzn-trace-id") ?? "",
    requestBytes: h.get("content-length") ?? "",
    responseBytes: "",
  };
}

/** Apache Common Log Format as Linkerd writes it (no byte count; the status, or `-` on failure). */
export function apacheLine(e: Entry, status: number | undefined): string {
  return `${e.clientAddr} ${e.clientId} - [${e.timestamp}] "${e.method} ${e.uri} ${e.version}" ${
    status ?? "-"
  }`;
}

/** One JSON object per line, keys as Linkerd's; `status` is absent when the request failed. */
export function jsonLine(
  e: Entry,
  status: number | undefined,
  totalNs: number,
  processingNs: number,
): string {
  const o: Record<string, string | number> = {
    "client.addr": e.clientAddr,
    "client.id": e.clientId,
    host: e.host,
    method: e.method,
    processing_ns: String(processingNs),
    request_bytes: e.requestBytes,
    response_bytes: e.responseBytes,
  };
  if (status !== undefined) o.status = status;
  o.timestamp = e.timestamp;
  o.total_ns = String(totalNs);
  o.trace_id = e.traceId;
  o.uri = e.uri;
  o.user_agent = e.userAgent;
  o.version = e.version;
  return JSON.stringify(o);
}

/** `2022-08-23T20:28:20.071809Z` from epoch milliseconds (with a fraction). */
export function rfc3339(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.floor((ms - whole) * 1000);
  const iso = new Date(whole).toISOString(); // …SS.mmmZ
  return `${iso.slice(0, 23)}${String(micros).padStart(3, "0")}Z`;
}
