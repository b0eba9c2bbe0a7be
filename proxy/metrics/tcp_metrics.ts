/**
 * Linkerd's proxy TCP metrics (names and labels as Linkerd's, so dashboards keep working).
 * Byte counts accumulate in plain per-connection fields and reach the counters at close and at
 * scrape time, so the byte path never does a label lookup. Connections whose bytes are moved by a
 * codec (HTTP) are `track`ed instead: their socket's own byte counts are read at scrape and at
 * close, so an open connection's bytes show while it is open and the data path pays nothing.
 */
import { type Registry } from "./registry.ts";
import { Counter, Gauge } from "./instruments.ts";

export type TcpLabels = Record<string, string>;

/** A socket's running byte counts (node:net sockets have them). */
export interface ByteCounts {
  readonly bytesRead: number;
  readonly bytesWritten: number;
}

/** The connection families' labels; outbound endpoint connections add Destination's `dst_*` labels. */
const CONN_LABELS = [
  "direction",
  "peer",
  "tls",
  "no_tls_reason",
  "client_id",
  "server_id",
  "srv_kind",
  "srv_name",
  "authz_kind",
  "authz_name",
  "target_addr",
];

export class ConnRecord {
  #m: TcpMetrics;
  readonly labels: TcpLabels;
  pendingRead = 0;
  pendingWrite = 0;
  #closed = false;
  #sock: ByteCounts | undefined;
  #seenRead = 0;
  #seenWrite = 0;

  constructor(m: TcpMetrics, labels: TcpLabels) {
    this.#m = m;
    this.labels = labels;
  }

  /** Bytes read from the peer this record describes. */
  read = (n: number): void => {
    this.pendingRead += n;
  };
  write = (n: number): void => {
    this.pendingWrite += n;
  };

  /** Counts every byte `sock` carried (also before this call), read at each scrape and at close. */
  track(sock: ByteCounts): void {
    this.#sock = sock;
  }

  flush(): void {
    const s = this.#sock;
    if (s !== undefined) {
      // Counts only grow; a socket that reports less (or nothing) adds nothing.
      const r = s.bytesRead ?? 0;
      const w = s.bytesWritten ?? 0;
      if (r > this.#seenRead) this.pendingRead += r - this.#seenRead;
      if (w > this.#seenWrite) this.pendingWrite += w - this.#seenWrite;
      this.#seenRead = Math.max(r, this.#seenRead);
      this.#seenWrite = Math.max(w, this.#seenWrite);
    }
    if (this.pendingRead > 0) this.#m.readBytes.inc(this.labels, this.pendingRead);
    if (this.pendingWrite > 0) this.#m.writeBytes.inc(this.labels, this.pendingWrite);
    this.pendingRead = 0;
    this.pendingWrite = 0;
  }

  close(errno: string | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.flush();
    this.#m.closeTotal.inc({ ...this.labels, errno: errno ?? "" });
    this.#m.openConnections.dec(this.labels);
    this.#m.live.delete(this);
    this.#sock = undefined;
  }
}

export class TcpMetrics {
  readonly openTotal: Counter;
  readonly closeTotal: Counter;
  readonly openConnections: Gauge;
  readonly readBytes: Counter;
  readonly writeBytes: Counter;
  readonly authzAllow: Counter;
  readonly authzDeny: Counter;
  readonly authzTerminate: Counter;
  readonly inboundErrors: Counter;
  readonly outboundErrors: Counter;
  readonly live = new Set<ConnRecord>();

  constructor(registry: Registry) {
    const flushAll = () => {
      for (const r of this.live) r.flush();
    };
    const registers = [registry];
    this.openTotal = new Counter({
      name: "tcp_open_total",
      help: "Total count of opened connections",
      labelNames: CONN_LABELS,
      openLabels: true,
      registers,
    });
    this.closeTotal = new Counter({
      name: "tcp_close_total",
      help: "Total count of closed connections",
      labelNames: [...CONN_LABELS, "errno"],
      openLabels: true,
      registers,
    });
    this.openConnections = new Gauge({
      name: "tcp_open_connections",
      help: "Number of currently-open connections",
      labelNames: CONN_LABELS,
      openLabels: true,
      registers,
    });
    this.readBytes = new Counter({
      name: "tcp_read_bytes_total",
      help: "Total count of bytes read from peers",
      labelNames: CONN_LABELS,
      openLabels: true,
      registers,
      collect: flushAll,
    });
    this.writeBytes = new Counter({
      name: "tcp_write_bytes_total",
      help: "Total count of bytes written to peers",
      labelNames: CONN_LABELS,
      openLabels: true,
      registers,
      collect: flushAll,
    });
    this.authzAllow = new Counter({
      name: "inbound_tcp_authz_allow_total",
      help: "Inbound connections allowed by an authorization",
      labelNames: ["srv_kind", "srv_name", "authz_kind", "authz_name", "tls", "client_id", "target_addr"],
      registers,
    });
    this.authzDeny = new Counter({
      name: "inbound_tcp_authz_deny_total",
      help: "Inbound connections refused because no authorization permits them",
      labelNames: ["srv_kind", "srv_name", "tls", "client_id", "target_addr"],
      registers,
    });
    this.authzTerminate = new Counter({
      name: "inbound_tcp_authz_terminate_total",
      help: "Inbound connections closed because a policy change no longer permits them",
      labelNames: ["srv_kind", "srv_name", "tls", "client_id", "target_addr"],
      registers,
    });
    this.inboundErrors = new Counter({
      name: "inbound_tcp_errors_total",
      help: "Inbound connections that failed before or while being forwarded",
      labelNames: ["error", "target_addr"],
      registers,
    });
    this.outboundErrors = new Counter({
      name: "outbound_tcp_errors_total",
      help: "Outbound connections that failed before or while being forwarded",
      labelNames: ["error", "target_addr"],
      registers,
    });
  }

  open(labels: TcpLabels): ConnRecord {
    const r = new ConnRecord(this, labels);
    this.openTotal.inc(labels);
    this.openConnections.inc(labels);
    this.live.add(r);
    return r;
  }
}
