/**
 * `LeaseApi` over the API server: GET, POST and PUT of one `coordination.k8s.io/v1` Lease with the
 * kubeconfig's credentials. PUT carries the read resourceVersion, so a stale write gets 409.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import * as http from "node:http";
import * as https from "node:https";
import type { Registry } from "prom-client";
import { systemClock } from "../../proto/support/clock.ts";
import { LeaderElector, type Lease, type LeaseApi, LeaseConflictError } from "./leader_election.ts";

/** An elector for a component's Lease over the API server, with the default timings. */
export function kubeLeaderElector(o: {
  kc: KubeConfig;
  namespace: string;
  lease: string;
  identity: string;
  registry?: Registry;
  log?: (line: string) => void;
}): LeaderElector {
  return new LeaderElector({
    api: new KubeLeaseApi(o.kc, o.namespace, o.lease),
    clock: systemClock,
    lease: o.lease,
    namespace: o.namespace,
    identity: o.identity,
    registry: o.registry,
    log: o.log,
  });
}

export class KubeLeaseApi implements LeaseApi {
  readonly #collection: string;
  readonly #path: string;

  constructor(
    private readonly kc: KubeConfig,
    namespace: string,
    name: string,
    private readonly fieldManager = "weft-leader-election",
  ) {
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    this.#path = `${this.#collection}/${name}`;
  }

  async get(signal: AbortSignal): Promise<Lease | undefined> {
    const r = await this.#request("GET", this.#path, signal);
    if (r.status === 404) return undefined;
    return this.#parse(r, `GET ${this.#path}`);
  }

  async create(lease: Lease, signal: AbortSignal): Promise<Lease> {
    return this.#parse(
      await this.#request("POST", this.#collection, signal, lease),
      `POST ${this.#collection}`,
    );
  }

  async update(lease: Lease, signal: AbortSignal): Promise<Lease> {
    return this.#parse(await this.#request("PUT", this.#path, signal, lease), `PUT ${this.#path}`);
  }

  #parse(r: { status: number; text: string }, what: string): Lease {
    if (r.status === 409) throw new LeaseConflictError(`${what}: ${message(r.text)}`);
    if (r.status < 200 || r.status >= 300) throw new Error(`${what}: HTTP ${r.status}: ${message(r.text)}`);
    return JSON.parse(r.text) as Lease;
  }

  async #request(
    method: string,
    path: string,
    signal: AbortSignal,
    body?: Lease,
  ): Promise<{ status: number; text: string }> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error("kubeconfig has no current cluster");
    const url = new URL(`${cluster.server.replace(/\/$/, "")}${path}`);
    if (body !== undefined) url.searchParams.set("fieldManager", this.fieldManager);
    const opts: https.RequestOptions = {
      method,
      headers: {
        Accept: "application/json",
        ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
      },
    };
    await this.kc.applyToHTTPSOptions(opts);
    signal.throwIfAborted();
    const mod = url.protocol === "https:" ? https : http;
    return await new Promise((resolve, reject) => {
      const req = mod.request(url, { ...opts, signal }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c) => text += c);
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }
}

function message(text: string): string {
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text.slice(0, 300);
  } catch {
    return text.slice(0, 300);
  }
}
