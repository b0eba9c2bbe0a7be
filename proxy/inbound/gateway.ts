/**
 * Multicluster gateway forwarding (issue 23; off unless the proxy runs in gateway mode). A direct
 * connection (mTLS to 4143) whose transport header names `<svc>.<ns>.svc.<local domain>` is:
 * authorized by the caller's identity under the inbound port's own policy (the gateway's Server
 * for 4143, or the default policy), resolved with Destination.Get(`name:port`), and forwarded with
 * the gateway's own mTLS to a target endpoint's inbound port, whose transport header names the
 * target port, keeps the session protocol and carries the caller's identity in weft's extension
 * field (`forwarded_client_id`), which the target believes only from a trusted gateway identity.
 * Bytes are then relayed both ways (backpressure, half-close, close propagation: forward.ts).
 *
 * Loops are refused: a target endpoint that is itself reached through a gateway (an authority
 * override), or whose identity is this proxy's or a gateway's. A connect failure marks the
 * endpoint unreachable and tries another one, as the outbound balancer does (up to 3 attempts).
 * Unmeshed endpoints are refused: the caller's identity could not travel end to end.
 */
import type * as net from "node:net";
import {
  encodeTransportHeader,
  TRANSPORT_HEADER_ALPN,
  type TransportHeader as Header,
} from "../../proto/transport_header_frame.ts";
import type { Endpoint } from "../core/endpoint.ts";
import type { Log } from "../core/log.ts";
import { addrKey, type Discovery, type InboundPortPolicy } from "../discovery/clients.ts";
import type { GatewayError, GatewayMetrics } from "../metrics/gateway_metrics.ts";
import type { TcpMetrics } from "../metrics/tcp_metrics.ts";
import type { ConnTracker } from "../transport/conn_tracker.ts";
import { forward } from "../transport/forward.ts";
import type { MeshTls } from "../transport/tls.ts";
import { authorize } from "./authorize.ts";

/** How many endpoints a connection tries before it fails (the outbound HTTP retry bound). */
const MAX_ATTEMPTS = 3;

/**
 * The outbound side's endpoint reachability registry (outbound/reachability.ts), as far as the
 * gateway uses it: failed endpoints are tried last and probed until they answer again.
 */
export interface Reachability {
  isDown(key: string): boolean;
  failed(key: string, ip: string, port: number): void;
  succeeded(key: string): void;
}

export interface GatewayOptions {
  /** `svc.<cluster domain>` suffixes (no final dot) that names must end with. */
  suffixes: string[];
  /** The inbound port, whose policy authorizes gateway callers. */
  inboundPort: number;
  /** The inbound port's current policy (the Server for it, or the default policy). */
  policy: (port: number) => Promise<InboundPortPolicy>;
  /** The policy watch of a port, to close connections a policy change no longer permits. */
  discovery: Discovery;
  tls: MeshTls;
  /** Identities of gateways (the trusted list): an endpoint with one of them would loop. */
  gatewayIdentities: ReadonlySet<string>;
  connectTimeoutMs: number;
  discoveryTimeoutMs: number;
  metrics: GatewayMetrics;
  tcp: TcpMetrics;
  tracker: ConnTracker;
  log: Log;
  reachability?: Reachability;
  random?: () => number;
}

export interface GatewayTarget {
  service: string;
  namespace: string;
  /** The name as Destination is asked for it, `<svc>.<ns>.<suffix>:<port>`. */
  authority: string;
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * `<svc>.<ns>.<suffix>` (one of `suffixes`, optionally with a final dot) and a port in 1..65535;
 * a string saying why otherwise.
 */
export function parseGatewayName(
  name: string,
  port: number,
  suffixes: readonly string[],
): GatewayTarget | string {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return `port ${port} is not in 1..65535`;
  const bare = (name.endsWith(".") ? name.slice(0, -1) : name).toLowerCase();
  for (const suffix of suffixes) {
    if (!bare.endsWith(`.${suffix}`)) continue;
    const labels = bare.slice(0, -suffix.length - 1).split(".");
    if (labels.length === 2 && labels.every((l) => LABEL.test(l))) {
      return { service: labels[0], namespace: labels[1], authority: `${bare}:${port}` };
    }
  }
  return `"${name.slice(0, 253)}" is not <service>.<namespace>.${suffixes.join("|")}`;
}

export class Gateway {
  readonly #o: GatewayOptions;

  constructor(o: GatewayOptions) {
    this.#o = o;
  }

  #fail(sock: net.Socket, error: GatewayError, targetName: string, message: string): void {
    this.#o.metrics.errors.inc({ error, target_name: targetName });
    this.#o.log("info", `gateway ${sock.remoteAddress}:${sock.remotePort} refused: ${message}`);
    sock.destroy();
  }

  /**
   * Serves a direct connection whose header named a target. `downstream` is the TLS socket after
   * the header; `clientId` the caller's verified identity.
   */
  async serve(
    downstream: net.Socket,
    header: Header,
    conn: { clientIp: string; clientId: string },
  ): Promise<void> {
    const o = this.#o;
    if (header.forwardedClientId !== "") {
      // Only a gateway sets it, and a gateway never sends to a gateway: a chain or a spoof.
      this.#fail(
        downstream,
        "forwarded_chain",
        "",
        "a gateway connection must not carry a forwarded identity",
      );
      return;
    }
    const target = parseGatewayName(header.name, header.port, o.suffixes);
    if (typeof target === "string") {
      this.#fail(downstream, "bad_name", "", `gateway target ${target}`);
      return;
    }
    const meta = { clientIp: conn.clientIp, tls: { clientId: conn.clientId } };
    const policy = await o.policy(o.inboundPort);
    const decision = authorize(policy, meta);
    if (!decision.allow) {
      this.#fail(
        downstream,
        "unauthorized",
        "",
        `${conn.clientId} may not use the gateway: ${decision.reason}`,
      );
      return;
    }
    const name = target.authority;
    let endpoints: Endpoint[];
    try {
      endpoints = await this.#resolve(name);
    } catch (e) {
      this.#fail(downstream, "discovery", name, (e as Error).message);
      return;
    }
    if (endpoints.length === 0) {
      this.#fail(downstream, "no_endpoints", name, `Destination knows no endpoint of ${name}`);
      return;
    }
    const own = o.tls.localName();
    const loop = (e: Endpoint) =>
      e.authorityOverride !== undefined ||
      (e.identity !== undefined && (e.identity.name === own || o.gatewayIdentities.has(e.identity.name)));
    const usable = endpoints.filter((e) => !loop(e));
    if (usable.length === 0) {
      this.#fail(downstream, "loop", name, `${name} resolves to a gateway (forwarding would loop)`);
      return;
    }
    const meshed = usable.filter((e) => e.identity !== undefined && e.opaqueTransportPort > 0);
    if (meshed.length === 0) {
      this.#fail(
        downstream,
        "target_not_meshed",
        name,
        `${name} has no meshed endpoint to carry ${conn.clientId}'s identity to`,
      );
      return;
    }
    let upstream: net.Socket | undefined;
    let chosen: Endpoint | undefined;
    const errors: string[] = [];
    for (const e of this.#order(meshed).slice(0, MAX_ATTEMPTS)) {
      try {
        upstream = await this.#connect(e, header, conn.clientId);
        chosen = e;
        break;
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    if (!upstream || !chosen) {
      this.#fail(
        downstream,
        "connect",
        name,
        `no endpoint of ${name} could be connected: ${errors.join("; ")}`,
      );
      return;
    }
    if (downstream.destroyed) {
      // The caller left while the target was resolved and connected: nothing to relay.
      upstream.destroy();
      return;
    }
    o.tracker.add(upstream);
    const targetAddr = addrKey(chosen.ip, chosen.port);
    o.log(
      "debug",
      `gateway ${conn.clientId} → ${name} via ${targetAddr} (${chosen.identity!.name})`,
    );
    o.metrics.openTotal.inc({ client_id: conn.clientId, target_name: name });
    o.metrics.open.inc({ target_name: name });
    const rec = o.tcp.open({
      direction: "inbound",
      peer: "src",
      tls: "true",
      client_id: conn.clientId,
      srv_kind: policy.serverKind,
      srv_name: policy.serverName,
      authz_kind: decision.authzKind,
      authz_name: decision.authzName,
      target_addr: name,
    });
    // As on the TCP path: a policy change that no longer permits the caller closes the relay.
    const watch = o.discovery.inbound.subscribe(o.inboundPort);
    const up = upstream;
    watch.onChange((now) => {
      if (authorize(now, meta).allow) return;
      o.log("info", `gateway ${conn.clientId} → ${name} closed: the gateway's policy no longer permits it`);
      downstream.destroy();
      up.destroy();
    });
    downstream.resume();
    forward(downstream, up, {
      aToB: rec.read,
      bToA: rec.write,
      closed: (e) => {
        watch.release();
        o.metrics.open.dec({ target_name: name });
        rec.close(e?.code);
      },
    });
  }

  async #resolve(name: string): Promise<Endpoint[]> {
    const h = this.#o.discovery.destination.subscribe(name);
    try {
      const v = await h.ready(this.#o.discoveryTimeoutMs);
      if (v.state === undefined) {
        if (v.status === "final") return [];
        throw new Error(`no answer from Destination.Get(${name}) within ${this.#o.discoveryTimeoutMs}ms`);
      }
      return [...v.state.endpoints.values()];
    } finally {
      h.release();
    }
  }

  /** Reachable endpoints first, each group shuffled. */
  #order(eps: Endpoint[]): Endpoint[] {
    const r = this.#o.reachability;
    const rnd = this.#o.random ?? Math.random;
    const shuffled = eps.map((e) => ({ e, k: rnd() })).sort((a, b) => a.k - b.k).map((x) => x.e);
    if (!r) return shuffled;
    const down = (e: Endpoint) => r.isDown(addrKey(e.ip, e.port));
    return [...shuffled.filter((e) => !down(e)), ...shuffled.filter(down)];
  }

  async #connect(e: Endpoint, header: Header, clientId: string): Promise<net.Socket> {
    const o = this.#o;
    const key = addrKey(e.ip, e.port);
    try {
      const { socket, alpn } = await o.tls.connect({
        host: e.ip,
        port: e.opaqueTransportPort,
        serverName: e.identity!.serverName,
        expectedIdentity: e.identity!.name,
        alpn: [TRANSPORT_HEADER_ALPN],
        timeoutMs: o.connectTimeoutMs,
      });
      if (alpn !== TRANSPORT_HEADER_ALPN) {
        socket.destroy();
        throw new Error(`${e.ip}:${e.opaqueTransportPort} did not negotiate ${TRANSPORT_HEADER_ALPN}`);
      }
      socket.on("error", () => {});
      socket.write(
        encodeTransportHeader({
          port: e.port,
          name: "",
          sessionProtocol: header.sessionProtocol,
          forwardedClientId: clientId,
        }),
      );
      o.reachability?.succeeded(key);
      return socket;
    } catch (err) {
      o.reachability?.failed(key, e.ip, e.opaqueTransportPort);
      throw err;
    }
  }
}
